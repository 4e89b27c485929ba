// Package web holds the query page: one HTML page with its script and
// styles, embedded in the binary so it works air-gapped (nothing is loaded
// from outside the server). The page talks to the server's read API
// (/v1/services, /v1/logs with histogram, /v1/tail) with fetch, sending a
// bearer token when the server asks for one.
package web

import (
	"embed"
	"path"
	"strings"
)

//go:embed static
var files embed.FS

// Asset returns the page file for a request path ("/" is the page itself,
// "/ui/app.js" a file next to it) and its content type; ok is false for any
// other path.
func Asset(p string) (body []byte, contentType string, ok bool) {
	switch {
	case p == "/" || p == "/index.html":
		p = "index.html"
	case strings.HasPrefix(p, "/ui/") && !strings.Contains(p, ".."):
		p = p[len("/ui/"):]
	default:
		return nil, "", false
	}
	b, err := files.ReadFile("static/" + p)
	if err != nil {
		return nil, "", false
	}
	return b, contentTypes[path.Ext(p)], true
}

var contentTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".css":  "text/css; charset=utf-8",
}
