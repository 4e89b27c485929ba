// Package cluster lets the instances that share a storage account know each
// other, through the account itself: no coordination service beside it.
//
// Each instance keeps one entity in table "cluster": PartitionKey the blob
// container (instances writing one container are one cluster), RowKey its
// id, properties its advertised URL, version, start time, a random run id
// and the key its peers present to tail it. Every --cluster-heartbeat (10 s)
// it rewrites its entity (an upsert) and lists the partition (one range
// query, one page up to 1,000 instances): 12 requests per instance per
// minute with the defaults, whatever the traffic. An instance whose entity
// was not written for --cluster-expiry (30 s) is gone. A clean shutdown
// deletes the entity (Leave), so the others drop it at their next listing;
// one killed expires. Entities silent for an hour are deleted by whichever
// instance lists them, so instances that never come back (a Deployment's
// pods, renamed hosts) do not accumulate.
//
// Ages are measured on the service's clock: the table's Timestamp of each
// entity against the Timestamp of this instance's own entity, written just
// before the listing, so instances whose clocks disagree still agree on who
// is live.
//
// The id is the instance's stable name (the host name by default, which a
// StatefulSet pod keeps across restarts): a restarted pod rewrites its own
// entity instead of appearing twice until the old one expires. Two live
// processes with one id overwrite each other and are seen as one: each
// notices another run id in its entity and logs it.
//
// Without a table (the embedded backend) the cluster is this instance alone
// and nothing is read or written.
//
//	m := cluster.New(cfg, cluster.Member{ID: "ingest-0", Version: v}, cluster.NewTable(svc, "logs"), reg, log)
//	m.Watch(func(n int) { keyer.SetInstances(n) })
//	m.Start(ctx, "http://10.0.0.7:8080") // registers; first listing
//	go m.Run(ctx)                        // heartbeats until ctx ends
//	defer m.Leave(context.Background())
//	peers := m.Peers()                   // the other live instances
//
// Members, Peers and Count read a snapshot under a mutex: no storage call.
package cluster
