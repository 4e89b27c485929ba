package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"ingest/internal/ingestexec"
)

// The files in deploy/ cannot be exercised here (no container engine, no
// systemd, no cluster), so these tests hold them to the binary: the command
// each one starts exists, every flag it passes parses, the server starts with
// those flags and answers the probes they name, and the paths they mount are
// the paths the flags use.

const repoRoot = "../.."

func readRepoFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, path))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// flagValue returns the value of --name in args ("--name v" or "--name=v").
func flagValue(args []string, name string) (string, bool) {
	for i, a := range args {
		if a == "--"+name && i+1 < len(args) {
			return args[i+1], true
		}
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v, true
		}
	}
	return "", false
}

// withoutFlags drops --name value pairs from args, for the flags a test
// must replace (listen address, data directory).
func withoutFlags(args []string, names ...string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		drop := false
		for _, n := range names {
			if args[i] == "--"+n {
				drop, i = true, i+1
				break
			}
			if strings.HasPrefix(args[i], "--"+n+"=") {
				drop = true
				break
			}
		}
		if !drop {
			out = append(out, args[i])
		}
	}
	return out
}

// checkParses runs the binary with args and --help: exit 0 means the
// command exists and every flag in args parses with its value.
func checkParses(t *testing.T, where string, args []string, env ...string) {
	t.Helper()
	cmd := ingestexec.Command(binary, append(append([]string{}, args...), "--help")...)
	cmd.Env = append(cmd.Env, env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: `ingest %s` does not parse: %v\n%s", where, strings.Join(args, " "), err, out)
	}
}

// checkRuns starts `ingest serve` with the args a deploy file passes (its
// listen address and data directory replaced by a free port and a temporary
// directory), asks each probe path for 200, and runs the healthcheck
// subcommand the way the file does.
func checkRuns(t *testing.T, args []string, probes []string, healthcheck []string, env ...string) {
	t.Helper()
	if len(args) == 0 || args[0] != "serve" {
		t.Fatalf("deploy file starts %q, want `ingest serve ...`", args)
	}
	for _, e := range env {
		k, v, _ := strings.Cut(e, "=")
		t.Setenv(k, v)
	}
	s := start(t, t.TempDir(), withoutFlags(args[1:], "listen", "data-dir")...)
	for _, p := range probes {
		resp, err := http.Get(s.url + p)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("probe %s answered %d, want 200", p, resp.StatusCode)
		}
	}
	if healthcheck != nil {
		hc := append(withoutFlags(healthcheck, "listen"), "--listen", strings.TrimPrefix(s.url, "http://"))
		if out, err := ingestexec.Command(binary, hc...).CombinedOutput(); err != nil {
			t.Errorf("`ingest %s` against a running server: %v\n%s", strings.Join(hc, " "), err, out)
		}
	}
}

// dockerfile is the parsed instructions of a Dockerfile, continuation
// lines joined.
type dockerfile []struct{ op, rest string }

func parseDockerfile(text string) dockerfile {
	var d dockerfile
	text = regexp.MustCompile(`\\\n\s*`).ReplaceAllString(text, "")
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		op, rest, _ := strings.Cut(line, " ")
		d = append(d, struct{ op, rest string }{strings.ToUpper(op), strings.TrimSpace(rest)})
	}
	return d
}

// all returns the arguments of every instruction op.
func (d dockerfile) all(op string) []string {
	var out []string
	for _, in := range d {
		if in.op == op {
			out = append(out, in.rest)
		}
	}
	return out
}

// last returns the arguments of the last instruction op (the one in force).
func (d dockerfile) last(t *testing.T, op string) string {
	t.Helper()
	all := d.all(op)
	if len(all) == 0 {
		t.Fatalf("Dockerfile has no %s", op)
	}
	return all[len(all)-1]
}

// execForm parses a JSON exec-form argument list (["/ingest", "serve"]).
func execForm(t *testing.T, what, s string) []string {
	t.Helper()
	var args []string
	if err := json.Unmarshal([]byte(s), &args); err != nil {
		t.Fatalf("Dockerfile %s is not in exec form (a JSON array): %q", what, s)
	}
	return args
}

func TestDeployDockerfile(t *testing.T) {
	d := parseDockerfile(readRepoFile(t, "deploy/Dockerfile"))
	if n := len(d.all("FROM")); n < 2 {
		t.Fatalf("Dockerfile has %d stages, want a multi-stage build", n)
	}

	// The build: static, of the package that is the binary.
	var built string
	for _, run := range d.all("RUN") {
		if !strings.Contains(run, "go build") {
			continue
		}
		if !strings.Contains(run, "CGO_ENABLED=0") {
			t.Errorf("go build without CGO_ENABLED=0 (the final image has no libc): %s", run)
		}
		m := regexp.MustCompile(`-o (\S+) (\./\S+)`).FindStringSubmatch(run)
		if m == nil {
			t.Fatalf("cannot find `-o OUT ./PKG` in %q", run)
		}
		built = m[1]
		if _, err := os.Stat(filepath.Join(repoRoot, m[2], "main.go")); err != nil {
			t.Errorf("the Dockerfile builds %s, which is not the ingest command: %v", m[2], err)
		}
	}
	if built == "" {
		t.Fatal("Dockerfile runs no go build")
	}
	for _, run := range d.all("RUN") {
		for _, m := range regexp.MustCompile(`-X main\.(\w+)=`).FindAllStringSubmatch(run, -1) {
			if !packageVars(t)[m[1]] {
				t.Errorf("the Dockerfile sets main.%s with -ldflags -X, which is not a string variable of cmd/ingest (-X would silently do nothing)", m[1])
			}
		}
	}

	// The binary copied into the final image is the one started.
	entry := execForm(t, "ENTRYPOINT", d.last(t, "ENTRYPOINT"))
	copied := false
	for _, c := range d.all("COPY") {
		f := strings.Fields(c)
		if len(f) >= 3 && f[len(f)-2] == built && f[len(f)-1] == entry[0] {
			copied = true
		}
	}
	if !copied {
		t.Errorf("ENTRYPOINT %s is not the built binary %s copied from the build stage", entry[0], built)
	}

	// Non-root, and the volume is the data directory.
	if u := d.last(t, "USER"); u == "0" || strings.HasPrefix(u, "root") || strings.HasPrefix(u, "0:") {
		t.Errorf("USER %s: the image must not run as root", u)
	}
	args := append(entry[1:], execForm(t, "CMD", d.last(t, "CMD"))...)
	dataDir, ok := flagValue(args, "data-dir")
	if !ok || dataDir != d.last(t, "VOLUME") {
		t.Errorf("serve --data-dir %q is not the VOLUME %q", dataDir, d.last(t, "VOLUME"))
	}
	listen, _ := flagValue(args, "listen")
	if _, port, _ := strings.Cut(listen, ":"); port != d.last(t, "EXPOSE") {
		t.Errorf("serve --listen %q does not use the EXPOSEd port %s", listen, d.last(t, "EXPOSE"))
	}

	// The health check: the binary's own subcommand, on the served port.
	hcLine := d.last(t, "HEALTHCHECK")
	_, hcJSON, ok := strings.Cut(hcLine, "CMD ")
	if !ok {
		t.Fatalf("HEALTHCHECK has no CMD: %q", hcLine)
	}
	hc := execForm(t, "HEALTHCHECK CMD", hcJSON)
	if hc[0] != entry[0] {
		t.Errorf("HEALTHCHECK runs %s, which is not the image's binary %s", hc[0], entry[0])
	}
	if l, _ := flagValue(hc[1:], "listen"); l != listen {
		t.Errorf("HEALTHCHECK asks --listen %q, the server listens on %q", l, listen)
	}
	checkParses(t, "Dockerfile CMD", args)
	checkParses(t, "Dockerfile HEALTHCHECK", hc[1:])
	checkRuns(t, args, []string{"/healthz", "/readyz"}, hc[1:])
}

func TestDeploySystemdUnit(t *testing.T) {
	unit := map[string]string{}
	for _, line := range strings.Split(readRepoFile(t, "deploy/ingest.service"), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(strings.TrimSpace(line), "#") {
			unit[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	exe := strings.Fields(unit["ExecStart"])
	if len(exe) < 2 || filepath.Base(exe[0]) != "ingest" {
		t.Fatalf("ExecStart %q does not start ingest", unit["ExecStart"])
	}
	args := exe[1:]
	dataDir, _ := flagValue(args, "data-dir")
	if want := "/var/lib/" + unit["StateDirectory"]; unit["StateDirectory"] == "" || dataDir != want {
		t.Errorf("--data-dir %q is not the StateDirectory %q (systemd creates and owns only that)", dataDir, want)
	}
	if unit["KillSignal"] != "SIGTERM" {
		t.Errorf("KillSignal %q: ingest flushes on SIGTERM", unit["KillSignal"])
	}
	if unit["User"] == "root" {
		t.Error("the unit runs as root")
	}
	checkParses(t, "ExecStart", args)
	checkRuns(t, args, []string{"/healthz", "/readyz"}, nil)
}

// k8sDocs decodes a multi-document manifest.
func k8sDocs(t *testing.T, path string) []map[string]any {
	t.Helper()
	dec := yaml.NewDecoder(strings.NewReader(readRepoFile(t, path)))
	var docs []map[string]any
	for {
		var doc map[string]any
		if err := dec.Decode(&doc); err != nil {
			if errors.Is(err, io.EOF) {
				return docs
			}
			t.Fatalf("%s: %v", path, err)
		}
		docs = append(docs, doc)
	}
}

// podContainer is a pod spec's first container, its args and its
// environment (INGEST_* variables as NAME=value; the Secret a variable
// comes from as secret:NAME/KEY).
func podContainer(t *testing.T, pod any) (c map[string]any, args []string, env map[string]string) {
	t.Helper()
	c = dig(pod, "containers").([]any)[0].(map[string]any)
	for _, a := range c["args"].([]any) {
		args = append(args, a.(string))
	}
	env = map[string]string{}
	for _, e := range c["env"].([]any) {
		e := e.(map[string]any)
		if ref := dig(e, "valueFrom", "secretKeyRef"); ref != nil {
			env[e["name"].(string)] = fmt.Sprintf("secret:%v/%v", dig(ref, "name"), dig(ref, "key"))
			continue
		}
		env[e["name"].(string)] = e["value"].(string)
	}
	return c, args, env
}

// mountOf returns the volume mounted at or above path, and its mount path.
func mountOf(pod, c map[string]any, path string) (volume map[string]any, mountPath string) {
	for _, m := range c["volumeMounts"].([]any) {
		m := m.(map[string]any)
		mp := m["mountPath"].(string)
		if path != mp && !strings.HasPrefix(path, strings.TrimSuffix(mp, "/")+"/") {
			continue
		}
		vols, _ := pod["volumes"].([]any)
		for _, v := range vols {
			if v := v.(map[string]any); v["name"] == m["name"] {
				return v, mp
			}
		}
		return map[string]any{"name": m["name"]}, mp
	}
	return nil, ""
}

func TestDeployKubernetes(t *testing.T) {
	var sts, svc map[string]any
	for _, doc := range k8sDocs(t, "deploy/kubernetes/ingest.yaml") {
		switch doc["kind"] {
		case "StatefulSet":
			sts = doc
		case "Service":
			if dig(doc, "spec", "clusterIP") != "None" {
				svc = doc
			}
		}
	}
	if sts == nil || svc == nil {
		t.Fatal("want a StatefulSet and a Service")
	}
	pod := dig(sts, "spec", "template", "spec").(map[string]any)
	c, args, envs := podContainer(t, pod)

	// The data directory is the mounted volume claim.
	dataDir, _ := flagValue(args, "data-dir")
	claim := dig(sts, "spec", "volumeClaimTemplates").([]any)[0].(map[string]any)
	if _, mp := mountOf(pod, c, dataDir); mp != dataDir {
		t.Errorf("--data-dir %q is not where a volume is mounted", dataDir)
	}
	for _, m := range c["volumeMounts"].([]any) {
		if m := m.(map[string]any); m["mountPath"] == dataDir && m["name"] != dig(claim, "metadata", "name") {
			t.Errorf("--data-dir %q is not the volume claim %v", dataDir, dig(claim, "metadata", "name"))
		}
	}

	// Ports: the container port is the listen port, the probes and the
	// Service point at it.
	listen, _ := flagValue(args, "listen")
	port := c["ports"].([]any)[0].(map[string]any)
	if _, p, _ := strings.Cut(listen, ":"); p != strconv.Itoa(port["containerPort"].(int)) {
		t.Errorf("--listen %q is not the containerPort %v", listen, port["containerPort"])
	}
	svcPort := dig(svc, "spec", "ports").([]any)[0].(map[string]any)
	if svcPort["targetPort"] != port["name"] && svcPort["targetPort"] != port["containerPort"] {
		t.Errorf("the Service targets %v, not the container port", svcPort["targetPort"])
	}
	var probes []string
	for probe, want := range map[string]string{"livenessProbe": "/healthz", "readinessProbe": "/readyz"} {
		get := dig(c, probe, "httpGet").(map[string]any)
		if get["path"] != want {
			t.Errorf("%s asks %v, want %s", probe, get["path"], want)
		}
		if get["port"] != port["name"] && get["port"] != port["containerPort"] {
			t.Errorf("%s asks port %v, not the container port", probe, get["port"])
		}
		probes = append(probes, get["path"].(string))
	}

	// Environment: the connection string from a Secret; every INGEST_*
	// variable names a flag of serve.
	var env []string
	if !strings.HasPrefix(envs["AZURE_STORAGE_CONNECTION_STRING"], "secret:") {
		t.Error("AZURE_STORAGE_CONNECTION_STRING is not taken from a Secret")
	}
	for name, value := range envs {
		if flag, ok := strings.CutPrefix(name, "INGEST_"); ok {
			env = append(env, name+"="+value)
			checkParses(t, "env "+name, []string{"serve", "--" + envFlag(flag), value})
		}
	}
	if sc := dig(pod, "securityContext", "runAsNonRoot"); sc != true {
		t.Error("the pod does not run as non-root")
	}
	checkK8sShutdown(t, sts, pod, c, args)
	tokens := checkK8sTokens(t, pod, c, args)
	if v, ok := flagValue(args, "max-conns-per-ip"); !ok || (v != "0" && atoi(t, v) < atoi(t, flagOr(args, "max-conns", "10000"))) {
		t.Errorf("--max-conns-per-ip %q: behind a proxy every connection comes from its few addresses; want 0 (none) or at least --max-conns", v)
	}
	checkParses(t, "StatefulSet args", args, env...)
	checkRuns(t, append(withoutFlags(args, "tokens"), "--tokens", tokens), probes, nil, env...)
	checkK8sDrainJob(t, sts, claim, args, envs)
}

// envFlag is the flag an INGEST_ variable names.
func envFlag(name string) string { return strings.ReplaceAll(strings.ToLower(name), "_", "-") }

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("%q is not a number", s)
	}
	return n
}

// flagOr is --name's value in args, else def.
func flagOr(args []string, name, def string) string {
	if v, ok := flagValue(args, name); ok {
		return v
	}
	return def
}

// checkK8sShutdown: the pod lingers in preStop so the Service stops
// routing to it first, then gets SIGTERM, and the grace period covers
// both and --shutdown-timeout (which bounds the whole exit) with room to
// spare, so the kubelet never kills a flush midway; a scaled-down
// replica's volume (its write-ahead log) is kept.
func checkK8sShutdown(t *testing.T, sts, pod, c map[string]any, args []string) {
	t.Helper()
	sleep, _ := dig(c, "lifecycle", "preStop", "sleep", "seconds").(int)
	if sleep < 1 || sleep > 30 {
		t.Errorf("preStop sleep %d s: want a short one (1..30 s) so the Service stops routing before SIGTERM", sleep)
	}
	timeout, err := time.ParseDuration(flagOr(args, "shutdown-timeout", "30s"))
	if err != nil {
		t.Fatal(err)
	}
	grace, _ := pod["terminationGracePeriodSeconds"].(int)
	if need := time.Duration(sleep)*time.Second + timeout + 5*time.Second; time.Duration(grace)*time.Second < need {
		t.Errorf("terminationGracePeriodSeconds %d: want at least the preStop sleep (%d s) + --shutdown-timeout (%v) + 5 s", grace, sleep, timeout)
	}
	if p := dig(sts, "spec", "persistentVolumeClaimRetentionPolicy", "whenScaled"); p != "Retain" {
		t.Errorf("persistentVolumeClaimRetentionPolicy.whenScaled %v: a removed replica's volume holds its write-ahead log; want Retain", p)
	}
}

// checkK8sTokens: --tokens is a file of a mounted Secret. It returns a
// tokens file of the test's own to start the server with.
func checkK8sTokens(t *testing.T, pod, c map[string]any, args []string) string {
	t.Helper()
	path, ok := flagValue(args, "tokens")
	if !ok {
		t.Fatal("serve has no --tokens: the API would be open to anyone who reaches the Service")
	}
	vol, _ := mountOf(pod, c, path)
	if vol == nil || dig(vol, "secret", "secretName") == nil {
		t.Errorf("--tokens %q is not in a mounted Secret", path)
	}
	file := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(file, []byte("tok-test\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

// checkK8sDrainJob: the drain Job runs `ingest drain` on a volume claim of
// the StatefulSet (data-ingest-N), with the StatefulSet's storage and
// sink settings, and drains a data directory.
func checkK8sDrainJob(t *testing.T, sts, claim map[string]any, serveArgs []string, serveEnv map[string]string) {
	t.Helper()
	var job map[string]any
	for _, doc := range k8sDocs(t, "deploy/kubernetes/drain-job.yaml") {
		if doc["kind"] == "Job" {
			job = doc
		}
	}
	if job == nil {
		t.Fatal("deploy/kubernetes/drain-job.yaml has no Job")
	}
	pod := dig(job, "spec", "template", "spec").(map[string]any)
	c, args, env := podContainer(t, pod)
	if len(args) == 0 || args[0] != "drain" {
		t.Fatalf("the Job runs %q, want ingest drain", args)
	}
	dataDir, _ := flagValue(args, "data-dir")
	vol, mp := mountOf(pod, c, dataDir)
	claimName, _ := dig(vol, "persistentVolumeClaim", "claimName").(string)
	pattern := fmt.Sprintf(`^%s-%s-\d+$`, dig(claim, "metadata", "name"), dig(sts, "metadata", "name"))
	if mp != dataDir || !regexp.MustCompile(pattern).MatchString(claimName) {
		t.Errorf("drain --data-dir %q is not a mounted claim of the StatefulSet (%s): %q at %q", dataDir, pattern, claimName, mp)
	}
	if env["AZURE_STORAGE_CONNECTION_STRING"] != serveEnv["AZURE_STORAGE_CONNECTION_STRING"] {
		t.Errorf("the Job takes the connection string from %q, the StatefulSet from %q", env["AZURE_STORAGE_CONNECTION_STRING"], serveEnv["AZURE_STORAGE_CONNECTION_STRING"])
	}
	// Every setting of serve that drain takes too is the same in the Job:
	// another container or compression would strand or split the data.
	for i := 1; i < len(serveArgs); i++ {
		name, ok := strings.CutPrefix(serveArgs[i], "--")
		if !ok || name == "data-dir" || i+1 >= len(serveArgs) {
			continue
		}
		value := serveArgs[i+1]
		if ingestexec.Command(binary, "drain", "--"+name, value, "--help").Run() != nil {
			continue // not a flag of drain
		}
		if got, _ := flagValue(args, name); got != value {
			t.Errorf("serve runs with --%s %s, the drain Job with %q", name, value, got)
		}
	}
	var envList []string
	for name, value := range serveEnv {
		if flag, ok := strings.CutPrefix(name, "INGEST_"); ok && ingestexec.Command(binary, "drain", "--"+envFlag(flag), value, "--help").Run() == nil && env[name] != value {
			t.Errorf("serve has %s=%s, the drain Job %q", name, value, env[name])
		}
	}
	for name, value := range env {
		if strings.HasPrefix(name, "INGEST_") {
			envList = append(envList, name+"="+value)
		}
	}
	checkParses(t, "drain Job args", args, envList...)
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "wal"), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := ingestexec.Command(binary, append(withoutFlags(args, "data-dir"), "--data-dir", dir)...)
	cmd.Env = append(cmd.Env, envList...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("the drain Job's command on a data directory: %v\n%s", err, out)
	}
}

// dig walks nested YAML maps; nil when a key is missing.
func dig(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

func TestHealthcheckCommand(t *testing.T) {
	s := start(t, t.TempDir())
	addr := strings.TrimPrefix(s.url, "http://")
	if out, err := ingestexec.Command(binary, "healthcheck", "--listen", addr).CombinedOutput(); err != nil {
		t.Fatalf("healthcheck against a running server: %v\n%s", err, out)
	}
	if out, err := ingestexec.Command(binary, "healthcheck", "--listen", addr, "--path", "/readyz").CombinedOutput(); err != nil {
		t.Fatalf("healthcheck --path /readyz against a running server: %v\n%s", err, out)
	}
	// INGEST_LISTEN, as set for the server, points the check at it.
	cmd := ingestexec.Command(binary, "healthcheck")
	cmd.Env = append(cmd.Env, "INGEST_LISTEN="+addr)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("healthcheck with INGEST_LISTEN: %v\n%s", err, out)
	}
	out, err := ingestexec.Command(binary, "healthcheck", "--listen", addr, "--path", "/no-such-path").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "404") {
		t.Fatalf("healthcheck of a path that answers 404: err %v, output %s", err, out)
	}
	s.kill9()
	out, err = ingestexec.Command(binary, "healthcheck", "--listen", addr).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "cannot reach") {
		t.Fatalf("healthcheck with the server gone: err %v, output %s", err, out)
	}
}

func TestHealthURL(t *testing.T) {
	for _, tc := range []struct {
		listen, path string
		tls          bool
		want         string
	}{
		{":8080", "/healthz", false, "http://127.0.0.1:8080/healthz"},
		{"0.0.0.0:9000", "readyz", false, "http://127.0.0.1:9000/readyz"},
		{"[::]:8443", "/healthz", true, "https://127.0.0.1:8443/healthz"},
		{"10.0.0.5:8080", "/healthz", false, "http://10.0.0.5:8080/healthz"},
		{"[::1]:8080", "/healthz", false, "http://[::1]:8080/healthz"},
	} {
		got, err := healthURL(tc.listen, tc.path, tc.tls)
		if err != nil || got != tc.want {
			t.Errorf("healthURL(%q, %q, %v) = %q, %v; want %q", tc.listen, tc.path, tc.tls, got, err, tc.want)
		}
	}
	if _, err := healthURL("8080", "/healthz", false); err == nil {
		t.Error("healthURL accepted a listen address without a port")
	}
}

// packageVars lists the package-level variables of this command (non-test
// files), which -ldflags -X can set.
func packageVars(t *testing.T) map[string]bool {
	t.Helper()
	fset := token.NewFileSet()
	vars := map[string]bool{}
	files, _ := filepath.Glob("*.go")
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range file.Decls {
			if gd, ok := decl.(*ast.GenDecl); ok && gd.Tok == token.VAR {
				for _, spec := range gd.Specs {
					for _, name := range spec.(*ast.ValueSpec).Names {
						vars[name.Name] = true
					}
				}
			}
		}
	}
	return vars
}

// TestHealthcheckHTTPS: with --tls-cert the check speaks TLS (--https), and
// plain HTTP against the TLS port fails.
func TestHealthcheckHTTPS(t *testing.T) {
	dir := t.TempDir()
	cert, key := selfSignedCert(t, dir)
	port := strconv.Itoa(freePort(t))
	cmd := ingestexec.Command(binary, "serve", "--listen", "127.0.0.1:"+port, "--data-dir", filepath.Join(dir, "data"), "--tls-cert", cert, "--tls-key", key)
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	var out []byte
	var err error
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if out, err = ingestexec.Command(binary, "healthcheck", "--https", "--listen", "127.0.0.1:"+port).CombinedOutput(); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatalf("healthcheck --https against a TLS server: %v\n%s\nserver log:\n%s", err, out, stderr.String())
	}
	if out, err := ingestexec.Command(binary, "healthcheck", "--listen", "127.0.0.1:"+port).CombinedOutput(); err == nil {
		t.Fatalf("plain-HTTP healthcheck against the TLS port succeeded: %s", out)
	}
}
