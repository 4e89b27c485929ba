// Package logql parses the part of LogQL, Loki's query language, that
// Grafana's Loki data source sends to browse logs, and nothing more:
//
//   - a stream selector on the labels service, host and level, with the
//     matchers =, !=, =~ and !~ ({service="api", level=~"warn|error"});
//   - line filters |= "text", != "text", |~ "regexp" and !~ "regexp";
//   - the stages | json, | logfmt and | drop __error__[, __error_details__],
//     which change nothing here: no label is ever extracted, so there is no
//     parsing error to drop;
//   - the log volume query sum by (level) (count_over_time(<selector and
//     filters> [range])), also written sum(...) by (level), grouped by
//     nothing or by (level, detected_level);
//   - constant expressions of vector(n) and numbers with + - * /, which the
//     data source's health check sends as vector(1)+vector(1).
//
// Anything else is an error whose message names this subset (Supported).
//
//	q, err := logql.Parse(`{service="api"} |= "timeout" | json`)
//	q.Kind == logql.Logs; q.Matches(labels); q.Keep(message)
//
// Label regular expressions are anchored at both ends, line filter ones are
// not, as in Loki. A query is at most MaxLength bytes, which bounds what
// its regular expressions cost to compile; matching is linear in the text
// (Go's regexp).
//
// Parse allocates the query's parts; matching (Query.Matches, Query.Keep)
// allocates nothing.
package logql
