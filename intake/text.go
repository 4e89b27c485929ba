package intake

import "ingest/logline"

// parseText makes each non-blank line a message.
func (p *Parser) parseText(body []byte, r *Result, emit func(*logline.Event) error) error {
	return forEachLine(body, r, func(n int, line []byte) error {
		p.ev.Reset()
		p.beginAttrs(nil)
		p.ev.Message = line
		p.finishEvent(false, false)
		return r.emit(n, emit, &p.ev)
	})
}
