package intake

import "ingest/logline"

// parseText makes each non-blank line a message.
func (p *Parser) parseText(body []byte, r *Result, emit func(*logline.Event)) {
	forEachLine(body, r, func(n int, line []byte) {
		p.ev.Reset()
		p.beginAttrs(nil)
		p.ev.Message = line
		p.finishEvent(false, false)
		r.Accepted++
		emit(&p.ev)
	})
}
