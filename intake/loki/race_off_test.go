//go:build !race

package loki

const raceEnabled = false
