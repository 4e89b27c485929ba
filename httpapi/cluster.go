package httpapi

import (
	"crypto/subtle"
	"encoding/json"

	"github.com/valyala/fasthttp"

	"ingest/cluster"
	"ingest/internal/httperr"
)

// ClusterAnswer is the body of GET /v1/cluster.
type ClusterAnswer struct {
	Instances []cluster.Member `json:"instances"`
}

// listCluster handles GET /v1/cluster: the live instances sharing this
// one's storage, by id.
func (s *Server) listCluster(ctx *fasthttp.RequestCtx) {
	if s.deps.Cluster == nil {
		writeError(ctx, &httperr.Error{Status: fasthttp.StatusNotFound, Msg: "this server keeps no cluster membership"})
		return
	}
	b, err := json.Marshal(ClusterAnswer{Instances: s.deps.Cluster.Members()})
	if err != nil {
		writeError(ctx, err)
		return
	}
	ctx.SetContentType("application/json")
	ctx.Write(append(b, '\n'))
}

// withTailKeyOrToken serves h for another instance presenting this one's
// tail key on its own tail (local=1), else as every /v1/ route: with a
// client's token when tokens are set. The instance a client reached has
// checked the client's token already; the key proves the request comes from
// an instance of the cluster (it is read from the cluster table), and
// works whatever token the client used, the local one of server.json too.
func (s *Server) withTailKeyOrToken(h fasthttp.RequestHandler) fasthttp.RequestHandler {
	return func(ctx *fasthttp.RequestCtx) {
		if s.deps.Cluster != nil && string(ctx.QueryArgs().Peek("local")) == "1" {
			var buf [128]byte
			if key, _ := presented(ctx, buf[:]); len(key) > 0 && subtle.ConstantTimeCompare(key, []byte(s.deps.Cluster.TailKey())) == 1 {
				h(ctx)
				return
			}
		}
		if s.authorize(ctx) {
			h(ctx)
		}
	}
}
