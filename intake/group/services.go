package group

import "sync"

// services remembers the services an instance took events of in the
// current and the previous hour of its clock, and counts the new ones it
// takes on this hour. A service seen last hour is carried into this one
// without counting: a busy instance does not meet its every service again
// at each hour boundary. Memory: the names of two hours, at most the
// active services plus the cap.
type services struct {
	max int // new services per hour; 0: no cap

	mu        sync.Mutex
	hour      int64 // of cur
	cur, prev map[string]struct{}
	added     int // new services taken on in hour
}

// admit reports whether the instance takes events of svc (its stored
// name) in the hour of now (Unix nanoseconds): a service it knows, or a
// new one within the cap.
func (s *services) admit(svc []byte, now int64) bool {
	hour := now / hourNanos
	s.mu.Lock()
	defer s.mu.Unlock()
	if hour != s.hour || s.cur == nil {
		s.rotate(hour)
	}
	if _, ok := s.cur[string(svc)]; ok {
		return true
	}
	if _, ok := s.prev[string(svc)]; !ok {
		if s.max > 0 && s.added >= s.max {
			return false
		}
		s.added++
	}
	s.cur[string(svc)] = struct{}{}
	return true
}

// rotate starts hour: last hour's services are kept as prev only when
// hour follows it.
func (s *services) rotate(hour int64) {
	if s.cur != nil && hour == s.hour+1 {
		s.prev = s.cur
	} else {
		s.prev = nil
	}
	s.cur = make(map[string]struct{}, len(s.prev))
	s.hour, s.added = hour, 0
}
