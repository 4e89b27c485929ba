//go:build !race

package es

const raceEnabled = false
