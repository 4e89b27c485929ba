package httpapi

import "runtime"

func (m *runtimeMem) read() {
	var s runtime.MemStats
	runtime.ReadMemStats(&s)
	m.totalAlloc = s.TotalAlloc
}
