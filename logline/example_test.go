package logline_test

import (
	"fmt"
	"time"

	"ingest/logline"
)

func ExampleAppendLine() {
	e := logline.Event{
		Time:    time.Date(2026, 11, 21, 18, 4, 5, 123456789, time.UTC).UnixNano(),
		Level:   logline.LevelError,
		Service: []byte("api"),
		Host:    []byte("web-1"),
		ID:      []byte("01JDQ8"),
		Message: []byte(`disk "/var" full; retrying`),
		Attrs:   []byte(`{"user":"u1","code":507}`),
	}
	buf := logline.AppendLine(nil, &e)
	fmt.Print(string(buf))
	// Output:
	// 1.0;2026-11-21T18:04:05.1234567Z;error;api;web-1;01JDQ8;"disk \"/var\" full; retrying";{"user":"u1","code":507}
}

func ExampleParse() {
	var e logline.Event
	line := []byte(`1.0;2026-11-21T18:04:05.1234567Z;warn;api;web-1;01JDQ8;"a \"quoted\" message";{}` + "\n")
	if err := logline.Parse(line, &e); err != nil {
		panic(err)
	}
	fmt.Println(e.Level, string(e.Service), string(e.Message), time.Unix(0, e.Time).UTC().Format(time.RFC3339Nano))
	// Output:
	// warn api a "quoted" message 2026-11-21T18:04:05.1234567Z
}
