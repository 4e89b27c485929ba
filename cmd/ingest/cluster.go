package main

import (
	"context"
	"log/slog"
	"net"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"ingest/cluster"
	"ingest/httpapi"
	"ingest/storage"
)

// openCluster returns this instance's membership of the cluster: in table
// "cluster" of the Azure account, keyed by the container, or alone on the
// embedded backend. Its id is the stats instance name (--stats-instance,
// the host name by default: a StatefulSet pod's stable name).
func openCluster(scfg *storage.Config, ccfg cluster.Config, id string, reg prometheus.Registerer, log *slog.Logger) (*cluster.Membership, error) {
	var table *cluster.Table
	if scfg.Azure() {
		tc, err := scfg.TableClient()
		if err != nil {
			return nil, err
		}
		table = cluster.NewTable(tc, scfg.Container)
	}
	return cluster.New(ccfg, cluster.Member{ID: id, Version: versionString()}, table, reg, log), nil
}

// joinCluster registers this instance under its advertised URL and keeps
// its entry fresh until ctx ends; the returned function leaves the cluster
// (at shutdown, so the others stop following this instance at once).
func joinCluster(ctx context.Context, m *cluster.Membership, hcfg *httpapi.Config, addr net.Addr) (leave func()) {
	url := hcfg.AdvertiseURL
	if url == "" {
		url = cluster.DefaultURL(addr, hcfg.TLS())
	}
	m.Start(ctx, url)
	go m.Run(ctx)
	return func() {
		c, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		m.Leave(c)
	}
}
