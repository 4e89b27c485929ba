package main

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"ingest/internal/fleetrun"
)

// TestFleetFaults is the short form of the fault suite's fleet run
// (scripts/faults --only fleet): four instances on one Azurite behind the
// load generator's round-robin, one killed and restarted, one stopped for
// good, one killed and drained, then Azurite frozen. Read back through the
// survivor: nothing lost or duplicated, every blob one instance's, the
// busiest partition-second under Azure's target, the stats counting the
// blobs' lines.
func TestFleetFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("takes about 40 s")
	}
	az, _ := pausedAzurite(t)
	var log strings.Builder
	res, err := fleetrun.Run(context.Background(), fleetrun.Config{
		Bin: binary, Dir: t.TempDir(), Azurite: az, Load: 6 * time.Second, Freeze: 2 * time.Second,
		Rate: 1500, Attack: 1000, Log: &log,
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	var out strings.Builder
	res.Print(&out)
	t.Logf("\n%s%s", log.String(), out.String())
	if !res.OK() {
		if d := os.Getenv("FLEET_KEEP"); d != "" {
			t.Logf("kept in %s", d)
		}
		t.Fatal("the fleet run broke a promise: see the figures above")
	}
}
