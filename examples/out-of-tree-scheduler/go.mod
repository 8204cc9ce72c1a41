module example.com/out-of-tree-scheduler

go 1.25.0
