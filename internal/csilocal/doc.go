// Package csilocal is kube-carry's node-local CSI driver for tests: a
// stand-in for the "local-dynamic" driver that the fork's scheduler
// capacity check serves (docs/local-dynamic.md).
//
// It speaks the names of that contract: CSI driver kubernetes.io.csi.local,
// StorageClass provisioner kubernetes.io/csi.local, and the pools of a node
// in its annotation csi.volume.kubernetes.io/kubernetes.io.csi.local (a JSON
// object, pool name → total capacity). With other Names (cmd/csi-local
// --driver-name) it runs as any other node-local CSI driver: driver and
// provisioner are that name, and the pools are in
// csi.volume.kubernetes.io/<driver>, for StorageClasses that opt into the
// fork's check with kube-carry.io/capacity-source. It has two halves,
// which one binary (cmd/csi-local) runs separately or together:
//
//   - The controller provisions the claims of WaitForFirstConsumer classes
//     of provisioner kubernetes.io/csi.local on their selected node
//     (sig-storage-lib-external-provisioner). It reads the node's pools from
//     the annotation, counts what the volumes already on the node use per
//     pool, waits a configurable latency, and fails with "Not enough free
//     space" when the volume does not fit, removing the claim's selected
//     node so that the pod is scheduled again, as the field's provisioner
//     does. The PV it creates is a CSI PV of driver kubernetes.io.csi.local
//     pinned to the node by kubernetes.io/hostname, with the pool in its
//     volumeAttributes and the request as capacity, rounded up to whole GiB
//     as the field's provisioner allocates (a 1Gi claim gets 1Gi). CSI
//     CreateVolume and DeleteVolume run the same code, so that csi-sanity
//     exercises it (package csisanity).
//   - The node plugin publishes a volume as a directory: a directory per
//     volume under its data directory, bind-mounted (read-only when asked)
//     at the target path. It registers itself with the kubelet through the
//     kubelet plugin registration API, and writes its pools into its Node's
//     annotation.
//
// What it is not: a storage system. A pool is a number, not a disk; the
// volumes of all pools are plain directories of one file system, and
// nothing limits what is written into them. The controller keeps the
// volumes it created since it started in memory and otherwise counts the
// PersistentVolumes in the API server; it does not see data on the node.
// Only filesystem ("mount") volumes with single-node access modes are
// supported: no block volumes, snapshots, expansion, staging or volume
// statistics. It is meant for test clusters (make cluster, e2e) and
// csi-sanity, not for production data.
package csilocal
