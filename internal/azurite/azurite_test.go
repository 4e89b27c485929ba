package azurite

import (
	"net"
	"os"
	"strconv"
	"testing"
)

func TestMain(m *testing.M) { os.Exit(RunMain(m)) }

func TestStartServesBothPorts(t *testing.T) {
	s := Shared(t)
	for _, p := range []int{s.BlobPort, s.TablePort} {
		c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			t.Fatalf("port %d: %v", p, err)
		}
		c.Close()
	}
}
