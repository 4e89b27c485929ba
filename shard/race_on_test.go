//go:build race

package shard

// raceEnabled: the race detector makes the single-goroutine simulation
// tens of times slower, so it runs its short variant.
const raceEnabled = true
