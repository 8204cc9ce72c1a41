module example.com/capacity

go 1.22
