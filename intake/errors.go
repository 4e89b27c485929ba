package intake

import "ingest/internal/httperr"

func errorf(status int, format string, args ...any) *httperr.Error {
	return httperr.New(status, format, args...)
}
