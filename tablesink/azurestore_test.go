package tablesink

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
)

func responseErr(status int, code, body string) error {
	h := http.Header{}
	if code != "" {
		h.Set("x-ms-error-code", code)
	}
	req, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1/devstoreaccount1/$batch", nil)
	return runtime.NewResponseError(&http.Response{StatusCode: status, Header: h, Body: io.NopCloser(strings.NewReader(body)), Request: req})
}

// A failed transaction as Azurite and Azure return it: 202 Accepted, no
// error code header, the real status and code in the multipart body.
const batch404 = "--batchresponse_1\r\nContent-Type: multipart/mixed; boundary=changesetresponse_2\r\n\r\n" +
	"--changesetresponse_2\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n" +
	"HTTP/1.1 404 Not Found\r\nContent-ID: 1\r\nContent-Type: application/json;odata=minimalmetadata;charset=utf-8\r\n\r\n" +
	`{"odata.error":{"code":"TableNotFound","message":{"lang":"en-US","value":"0:The table specified does not exist."}}}` +
	"\r\n--changesetresponse_2--\r\n--batchresponse_1--\r\n"

func TestWrapErr(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		want error // nil: none of the sentinels
	}{
		{"transaction 202 with TableNotFound inside", responseErr(202, "", batch404), ErrTableNotFound},
		{"transaction 202 with ServerBusy inside", responseErr(202, "", strings.Replace(strings.Replace(batch404, "404 Not Found", "503 Service Unavailable", 1), "TableNotFound", "ServerBusy", 1)), ErrTransient},
		{"503 ServerBusy", responseErr(503, "ServerBusy", ""), ErrTransient},
		{"500", responseErr(500, "InternalError", ""), ErrTransient},
		{"408", responseErr(408, "", ""), ErrTransient},
		{"409 EntityAlreadyExists", responseErr(409, "EntityAlreadyExists", ""), errExists},
		{"412", responseErr(412, "UpdateConditionNotSatisfied", ""), errPrecondition},
		{"404 ResourceNotFound", responseErr(404, "ResourceNotFound", ""), errNotFound},
		{"400 InvalidInput", responseErr(400, "InvalidInput", ""), nil},
		{"connection reset", &net.OpError{Op: "read", Err: syscall.ECONNRESET}, ErrTransient},
		{"unexpected EOF", io.ErrUnexpectedEOF, ErrTransient},
		{"try timeout", context.DeadlineExceeded, ErrTransient},
		{"other", errors.New("malformed response"), nil},
	} {
		got := wrapErr("op", c.err)
		for _, s := range []error{ErrTableNotFound, errNotFound, errExists, errPrecondition, ErrTransient} {
			if errors.Is(got, s) != (s == c.want) {
				t.Errorf("%s: wrapErr = %v; errors.Is(%v) = %v", c.name, got, s, errors.Is(got, s))
			}
		}
		if !strings.HasPrefix(got.Error(), "cannot op: ") {
			t.Errorf("%s: message %q", c.name, got)
		}
	}
	if wrapErr("op", nil) != nil {
		t.Fatal("wrapErr(nil) != nil")
	}
}
