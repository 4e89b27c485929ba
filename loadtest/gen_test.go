package loadtest

import (
	"bytes"
	"math"
	"math/rand/v2"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/valyala/fastjson"

	"ingest/logline"
)

func testRand() *rand.Rand { return rand.New(rand.NewPCG(1, 2)) }

func TestZipfShape(t *testing.T) {
	for _, s := range []float64{1.1, 1.5} {
		const n, draws = 1000, 400_000
		z := newZipfRanks(testRand(), s, n)
		counts := make([]float64, n)
		for range draws {
			k := z.next()
			if k < 0 || k >= n {
				t.Fatalf("s=%g: rank %d out of [0,%d)", s, k, n)
			}
			counts[k]++
		}
		// P(k) = (k+1)^-s / H(n,s).
		h := 0.0
		for k := range n {
			h += math.Pow(float64(k+1), -s)
		}
		if got, want := counts[0]/draws, 1/h; math.Abs(got-want)/want > 0.03 {
			t.Errorf("s=%g: share of rank 0 = %.4f, want %.4f", s, got, want)
		}
		if got, want := counts[0]/counts[1], math.Pow(2, s); math.Abs(got-want)/want > 0.05 {
			t.Errorf("s=%g: f(0)/f(1) = %.3f, want %.3f", s, got, want)
		}
		for k := 1; k < 8; k++ {
			if counts[k] >= counts[k-1] {
				t.Errorf("s=%g: frequencies not decreasing at rank %d: %v", s, k, counts[:8])
			}
		}
	}
}

func TestLogNormalSizes(t *testing.T) {
	for _, mean := range []int{64, 200, 1000} {
		l := newLogNormal(testRand(), mean, 1)
		const draws = 200_000
		v := make([]int, draws)
		sum := 0.0
		for i := range v {
			v[i] = l.next()
			sum += float64(v[i])
		}
		sort.Ints(v)
		m := float64(mean)
		if got := sum / draws; math.Abs(got-m)/m > 0.03 {
			t.Errorf("mean %d: sample mean %.1f", mean, got)
		}
		// Long tail: median well below the mean, p99.9 many times it.
		if med := float64(v[draws/2]); med < 0.5*m || med > 0.7*m {
			t.Errorf("mean %d: median %.0f, want about %.0f", mean, med, 0.61*m)
		}
		if p999 := float64(v[draws*999/1000]); p999 < 8*m {
			t.Errorf("mean %d: p99.9 %.0f, want a long tail (> %.0f)", mean, p999, 8*m)
		}
	}
}

func TestWeighted(t *testing.T) {
	w := newWeighted(levelWeights)
	r := testRand()
	counts := make([]float64, len(levelWeights))
	const draws = 100_000
	for range draws {
		counts[w.pick(r)]++
	}
	for i, want := range levelWeights {
		if got := counts[i] / draws; math.Abs(got-want) > 0.01 {
			t.Errorf("%s: share %.3f, want %.3f", levelNames[i], got, want)
		}
	}
}

func testConfig() Config {
	cfg := DefaultConfig()
	cfg.Batch = 200
	cfg.AttackUser = "victim@example.com"
	cfg.Seed = 7
	return cfg
}

// TestFill checks that every patched line is valid JSON with the expected
// id and timestamp, for both timestamp forms.
func TestFill(t *testing.T) {
	cfg := testConfig()
	c := generate(&cfg, testRand())
	var f filler
	var p fastjson.Parser
	t0 := time.Date(2026, 11, 21, 18, 4, 5, 999_990_000, time.UTC).UnixNano() // crosses a second
	for _, tc := range []struct {
		name   string
		tmpl   *template
		stream byte
	}{{"logs", c.logs[0], streamMain}, {"logins", c.logins[1], streamMain}, {"attack", c.attack[0], streamAttack}} {
		t.Run(tc.name, func(t *testing.T) {
			n := tc.tmpl.events() - 3 // a partial last batch
			const seq = 123_456_789
			body := f.fill(tc.tmpl, n, seq, t0)
			lines := bytes.Split(bytes.TrimSuffix(body, []byte("\n")), []byte("\n"))
			if len(lines) != n {
				t.Fatalf("%d lines, want %d", len(lines), n)
			}
			forms := map[tsKind]int{}
			for i, line := range lines {
				v, err := p.ParseBytes(line)
				if err != nil {
					t.Fatalf("line %d: %v: %s", i, err, line)
				}
				wantID := string(c.appendID(nil, tc.stream, seq+int64(i)))
				if got := string(v.GetStringBytes("id")); got != wantID {
					t.Fatalf("line %d: id %q, want %q", i, got, wantID)
				}
				want := t0 + int64(i)*tsStepNs
				var got int64
				var ts *fastjson.Value
				for _, k := range []string{"ts", "@timestamp", "time"} {
					if ts = v.Get(k); ts != nil {
						break
					}
				}
				switch ts.Type() {
				case fastjson.TypeString:
					forms[tsRFC3339]++
					got, err = logline.ParseTime(ts.GetStringBytes())
					if err != nil {
						t.Fatalf("line %d: %v", i, err)
					}
					want = want / 100 * 100
				case fastjson.TypeNumber:
					forms[tsEpochMs]++
					got = ts.GetInt64() * 1e6
					want = want / 1e6 * 1e6
				default:
					t.Fatalf("line %d: no timestamp: %s", i, line)
				}
				if got != want {
					t.Fatalf("line %d: time %d, want %d", i, got, want)
				}
				if tc.tmpl.kind == kindLogins {
					user := string(v.GetStringBytes("user"))
					if wantUser := string(c.userName(nil, tc.tmpl.users[i])); user != wantUser {
						t.Fatalf("line %d: user %q, want %q", i, user, wantUser)
					}
					if !v.Exists("success") || !v.Exists("ip") || !v.Exists("ua") {
						t.Fatalf("line %d: missing login fields: %s", i, line)
					}
				} else if !v.Exists("service") || !v.Exists("host") || !(v.Exists("message") || v.Exists("msg")) {
					t.Fatalf("line %d: missing log fields: %s", i, line)
				}
			}
			if forms[tsRFC3339] == 0 || forms[tsEpochMs] == 0 {
				t.Errorf("want both timestamp forms, got %v", forms)
			}
		})
	}
}

// TestTrafficMix checks the generated traffic's shape: level mix, message
// sizes around --event-size, attack attempts mostly failing.
func TestTrafficMix(t *testing.T) {
	cfg := testConfig()
	cfg.EventSize = 300
	c := generate(&cfg, testRand())
	var p fastjson.Parser
	levels := map[string]int{}
	services := map[string]bool{}
	var msgBytes, events int
	for _, tmpl := range c.logs {
		for _, line := range bytes.Split(bytes.TrimSpace(tmpl.body), []byte("\n")) {
			v, err := p.ParseBytes(line)
			if err != nil {
				t.Fatal(err)
			}
			lvl := v.GetStringBytes("level")
			if lvl == nil {
				lvl = v.GetStringBytes("severity")
			}
			levels[string(lvl)]++
			services[string(v.GetStringBytes("service"))] = true
			msg := v.GetStringBytes("message")
			if msg == nil {
				msg = v.GetStringBytes("msg")
			}
			msgBytes += len(msg)
			events++
		}
	}
	if got := float64(msgBytes) / float64(events); math.Abs(got-300)/300 > 0.1 {
		t.Errorf("mean message size %.0f, want about 300", got)
	}
	if len(services) != cfg.Services {
		t.Errorf("%d services, want %d", len(services), cfg.Services)
	}
	if info := float64(levels["info"]) / float64(events); info < 0.65 || info > 0.85 {
		t.Errorf("info share %.2f: want mostly info (levels %v)", info, levels)
	}
	if levels["error"] == 0 || levels["error"] > levels["warn"] || levels["fatal"] > levels["error"] {
		t.Errorf("want few errors and fewer fatals: %v", levels)
	}
	fails := 0
	for _, line := range bytes.Split(bytes.TrimSpace(c.attack[0].body), []byte("\n")) {
		v, _ := p.ParseBytes(line)
		if string(v.GetStringBytes("user")) != cfg.AttackUser {
			t.Fatalf("attack attempt on another user: %s", line)
		}
		if !v.GetBool("success") {
			fails++
		}
	}
	if n := c.attack[0].events(); fails < n*9/10 {
		t.Errorf("attack: %d of %d attempts failed, want nearly all", fails, n)
	}
}

func TestCompressRoundTrip(t *testing.T) {
	cfg := testConfig()
	c := generate(&cfg, testRand())
	raw := c.logs[0].body
	for _, enc := range []string{"identity", "gzip", "zstd"} {
		comp := compressor{encoding: enc}
		for range 2 { // the second round reuses the encoder
			out := comp.compress(raw)
			got := decode(t, enc, out)
			if !bytes.Equal(got, raw) {
				t.Fatalf("%s: round trip differs", enc)
			}
			if enc != "identity" && len(out) >= len(raw) {
				t.Errorf("%s: %d bytes from %d", enc, len(out), len(raw))
			}
		}
		comp.close()
	}
}

func TestFillAllocs(t *testing.T) {
	cfg := testConfig()
	c := generate(&cfg, testRand())
	var f filler
	f.fill(c.logs[0], cfg.Batch, 0, 1)
	seq := int64(0)
	allocs := testing.AllocsPerRun(100, func() {
		f.fill(c.logs[int(seq)%len(c.logs)], cfg.Batch, seq, time.Now().UnixNano())
		seq += int64(cfg.Batch)
	})
	if allocs > 0 {
		t.Errorf("fill allocates %.1f times per batch", allocs)
	}
}

// BenchmarkFill measures the body generator: patching a pre-generated
// batch with fresh ids and times.
func BenchmarkFill(b *testing.B) {
	for _, size := range []int{64, 160, 512} {
		b.Run("event-size="+strconv.Itoa(size), func(b *testing.B) {
			cfg := testConfig()
			cfg.Batch = 1000
			cfg.EventSize = size
			c := generate(&cfg, testRand())
			var f filler
			b.SetBytes(int64(len(c.logs[0].body)))
			b.ReportAllocs()
			t0 := time.Now().UnixNano()
			var seq int64
			for i := 0; b.Loop(); i++ {
				f.fill(c.logs[i%len(c.logs)], cfg.Batch, seq, t0)
				seq += int64(cfg.Batch)
			}
			b.ReportMetric(float64(b.N)*float64(cfg.Batch)/b.Elapsed().Seconds(), "events/s")
		})
	}
}

// BenchmarkCompress measures the per-request encoding cost.
func BenchmarkCompress(b *testing.B) {
	for _, enc := range []string{"gzip", "zstd"} {
		b.Run(enc, func(b *testing.B) {
			cfg := testConfig()
			cfg.Batch = 1000
			c := generate(&cfg, testRand())
			comp := compressor{encoding: enc}
			defer comp.close()
			b.SetBytes(int64(len(c.logs[0].body)))
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				comp.compress(c.logs[i%len(c.logs)].body)
			}
			b.ReportMetric(float64(b.N)*float64(cfg.Batch)/b.Elapsed().Seconds(), "events/s")
		})
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
