#!/usr/bin/env bash
# The container image and the systemd unit, built and run for real (make test; about 10 s once
# the static binary is built).
#
# 1. The image's file system, built by deploy/image/rootfs.sh exactly as the Dockerfile's build
#    stage builds it; its binary must be static (file, ldd).
# 2. The image: the Dockerfile's final stage (FROM scratch …) built with buildah from that file
#    system (base images cannot be pulled here, so the golang stage is run on the host), then
#    run with podman: serve with a read-only root file system, every capability dropped, the
#    image's own user (uid 65532 must be what runs), /data a named volume; the sandbox from
#    the same image (read-only, a tmpfs /tmp). Checked: /readyz, the image's HEALTHCHECK, a
#    real pre-recorded job whose callback comes back through the sandbox (subtitles and file
#    sink written under /data, by uid 65532), and a clean stop on SIGTERM (exit 0).
#    Without podman, buildah and runc (crun refuses this machine's hybrid cgroups), or when they
#    cannot run a container here, the same checks run on the static binary chrooted into the
#    file system as uid 65532, the root bind-mounted read-only and only /data writable, and
#    the script says so (IMAGE_TEST_MODE=chroot forces it).
# 3. The replicas topology of deploy/compose.yaml, as near as this machine allows (its base
#    images cannot be pulled): two serve replicas from the image with the compose file's
#    deploy/compose/replica.yaml and one shared volume, PostgreSQL (scripts/pg.sh) and
#    redis-server from Debian, HAProxy with deploy/compose/haproxy.cfg (its addresses made
#    loopback ports), the sandbox container posting callbacks to the balancer. A job is
#    received through the balancer, its subtitles served by both replicas; then one replica is
#    killed and a second job still comes back. Podman only.
# 4. deploy/systemd/scribehook.service: systemd-analyze verify, and security (the exposure
#    score is printed; above 2.0 fails). deploy/compose/haproxy.cfg: haproxy -c.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=$PATH:/usr/local/go/bin

work=$(mktemp -d /tmp/scribehook-image.XXXXXX)
pids=()
ctr=()
podman_s=()
pg_dir="" # the PostgreSQL cluster this script started
# descendants PID: the processes under PID, deepest first (the chroot fallback's servers run
# under unshare, under a subshell of this script).
descendants() {
	local c
	for c in $(pgrep -P "$1"); do
		descendants "$c"
		echo "$c"
	done
}
descendant_named() { # descendant_named PID NAME: the first process under PID called NAME
	local p
	for p in $(descendants "$1"); do
		[ "$(cat "/proc/$p/comm" 2>/dev/null)" = "$2" ] && echo "$p" && return
	done
}
cleanup() {
	set +e
	for c in "${ctr[@]}"; do podman "${podman_s[@]}" rm -f -t 0 "$c" >/dev/null 2>&1; done
	[ -n "$pg_dir" ] && SCRIBEHOOK_PG_DIR=$pg_dir scripts/pg.sh stop >/dev/null 2>&1
	for p in "${pids[@]}"; do
		kill $(descendants "$p") "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	if [ -n "${podman_s[*]}" ]; then
		podman "${podman_s[@]}" volume rm -a -f >/dev/null 2>&1
		podman "${podman_s[@]}" rmi -a -f >/dev/null 2>&1
	fi
	grep -q " $work/" /proc/mounts && awk -v w="$work/" 'index($2, w) == 1 {print $2}' /proc/mounts | sort -r | xargs -r umount -l
	rm -rf "$work"
}
trap cleanup EXIT
fail() {
	echo "image-test: FAIL: $*" >&2
	local c f
	for c in "${ctr[@]}"; do
		echo "--- podman logs $c" >&2
		podman "${podman_s[@]}" logs "$c" 2>&1 | tail -20 >&2
	done
	for f in "$work"/*.log; do
		[ -s "$f" ] && { echo "--- $f" >&2; tail -20 "$f" >&2; }
	done
	exit 1
}
step() { echo "image-test: $*"; }
start=$SECONDS

# --- 1. the file system and its static binary --------------------------------------------------
deploy/image/rootfs.sh "$work/rootfs"
bin=$work/rootfs/scribehook
file -b "$bin" | grep -q "statically linked" || fail "not static: $(file -b "$bin")"
if ldd "$bin" >/dev/null 2>&1; then fail "ldd finds dynamic dependencies: $(ldd "$bin")"; fi
step "static binary: $(file -b "$bin" | cut -d, -f1-4), $(du -h "$bin" | cut -f1) ($((SECONDS - start)) s)"

# --- 2. the image ------------------------------------------------------------------------------
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
port=$(free_port) sbport=$(free_port) fsport=$(free_port)
# serve refuses a weak read token: a fresh random one, as an operator makes it.
export SCRIBEHOOK_API_KEY=image-test-key SCRIBEHOOK_READ_TOKEN="$(head -c 32 /dev/urandom | base64 | tr -d "\n=+/")"
data=$work/data # the chroot's /data; podman's is a named volume
mkdir -p "$data"
chown 65532:65532 "$data"
# serve as the image configures it, on free loopback ports, the sandbox as its service.
serve_env=(-e SCRIBEHOOK_LISTEN=127.0.0.1:$port -e SCRIBEHOOK_PUBLIC_URL=http://127.0.0.1:$port
	-e SCRIBEHOOK_SERVICE_BASE_URL=http://127.0.0.1:$sbport -e SCRIBEHOOK_API_KEY -e SCRIBEHOOK_READ_TOKEN)
sandbox_args=(sandbox --listen 127.0.0.1:$sbport --allow-fetch 127.0.0.0/8)

# The sample the sandbox fetches, from a file server on the host.
(cd cmd/scribehook/demodata && exec python3 -m http.server --bind 127.0.0.1 "$fsport" >"$work/fileserver.log" 2>&1) &
pids+=($!)

mode=${IMAGE_TEST_MODE:-podman}
why=""
if [ "$mode" = podman ]; then
	for c in podman buildah runc; do command -v $c >/dev/null || why="$c is not installed"; done
fi
if [ "$mode" = podman ] && [ -z "$why" ]; then
	# Storage of its own (vfs: no overlay mounts to leave behind), runc, no systemd.
	podman_s=(--root "$work/storage" --runroot "$work/run" --storage-driver vfs --runtime runc --cgroup-manager cgroupfs --events-backend file)
	buildah_s=(--root "$work/storage" --runroot "$work/run" --storage-driver vfs)
	# The Dockerfile's final stage, its COPY --from=build taking the file system built above
	# (/rootfs/) and the volume's empty directory (/data) from the build context instead.
	mkdir "$work/data-dir"
	awk '/^FROM scratch/ {p = 1} p' Dockerfile |
		sed -e 's#^COPY --from=build \(.*\)/rootfs/ /$#COPY \1rootfs/ /#' \
			-e 's#^COPY --from=build \(.*\)/data /data$#COPY \1data-dir /data#' >"$work/Containerfile"
	if grep -q -- '--from' "$work/Containerfile" || [ "$(grep -c '^COPY' "$work/Containerfile")" != 2 ]; then
		fail "the Dockerfile's final stage copies other than /rootfs/ and /data: $(grep '^COPY' "$work/Containerfile")"
	fi
	buildah "${buildah_s[@]}" bud -q --format docker -f "$work/Containerfile" -t localhost/scribehook:test "$work" >/dev/null
	# Limits below this machine's (podman would raise them, which it may not do here).
	run=(podman "${podman_s[@]}" run -d --network host --read-only --read-only-tmpfs=false --cap-drop all
		--security-opt no-new-privileges --ulimit nofile=4096:4096 --ulimit nproc=4096:4096)
	if ! out=$("${run[@]}" --name image-test-probe localhost/scribehook:test healthcheck --url http://127.0.0.1:1/ 2>&1); then
		why="podman cannot run a container here: $(echo "$out" | tail -1)"
	else
		ctr+=(image-test-probe)
	fi
fi
if [ "$mode" = podman ] && [ -n "$why" ]; then
	echo "image-test: the image cannot be built or run here ($why)"
	echo "image-test: FALLBACK: testing the static binary the image wraps, chrooted into its file system as uid 65532"
	mode=chroot
fi

if [ "$mode" = podman ]; then
	step "image built: $(podman "${podman_s[@]}" image inspect localhost/scribehook:test --format '{{.Size}}') bytes ($((SECONDS - start)) s)"
	"${run[@]}" --name image-test-sandbox -e SCRIBEHOOK_API_KEY --tmpfs /tmp:size=64m localhost/scribehook:test "${sandbox_args[@]}" >/dev/null 2>>"$work/podman.log"
	ctr+=(image-test-sandbox)
	# A named volume, initialised from the image's /data (its owner included), and no --user:
	# the image's USER must be what runs and be able to write there.
	podman "${podman_s[@]}" volume create image-test-data >/dev/null
	data=$(podman "${podman_s[@]}" volume inspect -f '{{.Mountpoint}}' image-test-data)
	"${run[@]}" --name image-test-serve -v image-test-data:/data "${serve_env[@]}" localhost/scribehook:test >/dev/null 2>>"$work/podman.log"
	ctr+=(image-test-serve)
	in_serve() { podman "${podman_s[@]}" exec image-test-serve /scribehook "$@"; }
	serve_pid() { podman "${podman_s[@]}" inspect -f '{{.State.Pid}}' image-test-serve; }
	stop_serve() {
		podman "${podman_s[@]}" stop -t 30 image-test-serve >/dev/null 2>>"$work/podman.log" || fail "podman stop image-test-serve"
		rc=$(podman "${podman_s[@]}" inspect -f '{{.State.ExitCode}}' image-test-serve)
	}
else
	# The image without an image runtime: its file system bind-mounted read-only as the root,
	# /data the only writable place (and a tmpfs /tmp), uid and gid 65532, the image's ENV.
	mkdir "$work/rootfs/data" # the mount point the Dockerfile's second COPY makes
	chrooted() { # chrooted NAME DATA-DIR [VAR=VALUE…] -- ARGS…: /scribehook ARGS in the image's root
		local root=$work/root-$1 rw=$2
		shift 2
		mkdir -p "$root"
		unshare --mount --fork sh -c '
			set -e
			root=$1 rootfs=$2 rw=$3 chroot=$(command -v chroot)
			shift 3
			mount --make-rprivate /
			mount --bind "$rootfs" "$root"
			if [ -n "$rw" ]; then mount --bind "$rw" "$root/data"; fi
			mount -t tmpfs -o size=64m tmpfs "$root/tmp"
			mount -o remount,bind,ro "$root"
			cd "$root/data"
			env=""
			while [ "$1" != -- ]; do env="$env $1"; shift; done
			shift
			exec env -i SCRIBEHOOK_CONFIG=/etc/scribehook/scribehook.yaml \
				SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt $env \
				"$chroot" --userspec=65532:65532 "$root" /scribehook "$@"' sh "$root" "$work/rootfs" "$rw" "$@"
	}
	senv=()
	for kv in "${serve_env[@]}"; do
		case $kv in -e) ;; *=*) senv+=("$kv") ;; *) senv+=("$kv=${!kv}") ;; esac
	done
	chrooted sandbox "" "SCRIBEHOOK_API_KEY=$SCRIBEHOOK_API_KEY" -- "${sandbox_args[@]}" >"$work/sandbox.log" 2>&1 &
	pids+=($!)
	chrooted serve "$data" "${senv[@]}" -- serve >"$work/serve.log" 2>&1 &
	serve_wrapper=$!
	pids+=($serve_wrapper)
	in_serve() { chrooted exec "$data" "${senv[@]}" -- "$@"; }
	serve_pid() { descendant_named "$serve_wrapper" scribehook; }
	stop_serve() {
		kill -TERM "$(serve_pid)" || fail "no serve to send SIGTERM to"
		rc=0
		wait "$serve_wrapper" || rc=$?
	}
fi

# serve answers /readyz, and the image's health check says healthy.
wait_ready() { # wait_ready URL: until it answers 2xx, 20 s at most
	for _ in $(seq 100); do
		curl -fsS "$1" >/dev/null 2>&1 && return 0
		sleep 0.2
	done
	return 1
}
wait_ready "http://127.0.0.1:$port/readyz" || true
ready=$(curl -sS -w ' %{http_code}' "http://127.0.0.1:$port/readyz") || fail "serve never answered /readyz"
[ "${ready##* }" = 200 ] || fail "/readyz: $ready"
in_serve healthcheck >/dev/null || fail "scribehook healthcheck inside the image failed"
if [ "$mode" = podman ]; then
	# HEALTHCHECK itself (podman runs the image's command; without systemd it has no timer).
	health=$(podman "${podman_s[@]}" healthcheck run image-test-serve 2>/dev/null) || fail "podman healthcheck run: ${health:-unhealthy}"
fi
pid=$(serve_pid)
uid=$(awk '/^Uid:/ {print $2 "/" $3}' "/proc/$pid/status")
[ "$uid" = 65532/65532 ] || fail "serve runs as uid $uid, want 65532"
# Its mounts as it sees them: / read-only, /data writable (field 5 is the mount point, 6 its options).
mounts=$(awk '$5 == "/" || $5 == "/data" {print $5, $6}' "/proc/$pid/mountinfo")
grep -qE '^/ ro(,|$)' <<<"$mounts" || fail "serve's root is not mounted read-only: $mounts"
grep -qE '^/data rw(,|$)' <<<"$mounts" || fail "serve's /data is not writable: $mounts"
step "serve ready as uid 65532, read-only root, healthcheck healthy: ${ready% *} ($((SECONDS - start)) s)"

# A real job: created at the sandbox, its callback back into serve, processed, subtitled.
for _ in $(seq 50); do curl -s -o /dev/null "http://127.0.0.1:$sbport/" && break; sleep 0.2; done
out=$(in_serve submit --audio-url "http://127.0.0.1:$fsport/sample.wav" --subtitles --wait --timeout 60s -o json 2>>"$work/submit.log") ||
	fail "submit --wait: $out"
job=$(python3 -c 'import json,sys; print(json.loads(sys.stdin.read())["id"])' <<<"$out")
rec=$(curl -fsS -H "Authorization: Bearer $SCRIBEHOOK_READ_TOKEN" "http://127.0.0.1:$port/v1/jobs/$job")
python3 - "$rec" <<'PY' || fail "job record: $rec"
import json, sys
r = json.loads(sys.argv[1])
assert r["status"] == "done", r["status"]
names = sorted(a["name"] for a in r["local"]["artifacts"])
assert any(n.endswith(".srt") for n in names) and any(n.endswith(".vtt") for n in names), names
PY
# (|| true: a missing directory must reach fail below, not end the script silently under pipefail)
srt=$(find "$data/artifacts/$job" -name '*.srt' | head -1) || true
[ -s "$srt" ] || fail "no SRT under /data/artifacts/$job"
[ "$(stat -c %u "$srt")" = 65532 ] || fail "$srt is owned by uid $(stat -c %u "$srt"), want 65532"
events=$(find "$data/out" -type f | wc -l) || true
[ "$events" -ge 2 ] || fail "the file sink wrote $events files under /data/out, want job.created and more"
step "job $job: callback received, $(grep -c -- '-->' "$srt") cues in $(basename "$srt"), $events sink files, all by uid 65532 ($((SECONDS - start)) s)"

# A stop on SIGTERM is clean.
stop_serve
[ "$rc" = 0 ] || fail "serve exited $rc on SIGTERM, want 0"
step "serve stopped on SIGTERM, exit 0 ($mode) ($((SECONDS - start)) s)"

# --- 3. the replicas topology -------------------------------------------------------------------
if [ "$mode" = podman ]; then
	pg_env=$(scripts/pg.sh start) || fail "scripts/pg.sh start"
	eval "$pg_env"
	pg_dir=$SCRIBEHOOK_PG_DIR
	rport=$(free_port) lbport=$(free_port) r1port=$(free_port) r2port=$(free_port)
	redis-server --bind 127.0.0.1 --port "$rport" --save '' --appendonly no >"$work/redis.log" 2>&1 &
	pids+=($!)
	# The compose file's balancer, its service names made this machine's loopback ports.
	sed -e "s/^\( *bind \).*/\1127.0.0.1:$lbport/" -e '/^resolvers /,/^$/d' -e 's/ resolvers docker//' \
		-e "s/^\( *server replica-1 \).*/\1127.0.0.1:$r1port/" -e "s/^\( *server replica-2 \).*/\1127.0.0.1:$r2port/" \
		deploy/compose/haproxy.cfg >"$work/haproxy.cfg"
	[ "$(grep -c "^ *server replica-[12] 127.0.0.1:" "$work/haproxy.cfg")" = 2 ] || fail "haproxy.cfg: replica-1 and replica-2 not found"
	haproxy -db -f "$work/haproxy.cfg" >"$work/haproxy.log" 2>&1 &
	pids+=($!)
	podman "${podman_s[@]}" volume create image-test-shared >/dev/null
	for r in 1 2; do
		rp=r${r}port
		"${run[@]}" --name image-test-replica-$r -v image-test-shared:/data \
			-v "$PWD/deploy/compose/replica.yaml:/etc/scribehook/scribehook.yaml:ro" \
			-e SCRIBEHOOK_LISTEN=127.0.0.1:${!rp} -e SCRIBEHOOK_PUBLIC_URL=http://127.0.0.1:$lbport \
			-e SCRIBEHOOK_SERVICE_BASE_URL=http://127.0.0.1:$sbport -e SCRIBEHOOK_STORE_DSN="$SCRIBEHOOK_TEST_PG_DSN" \
			-e SCRIBEHOOK_BUS_URL=redis://127.0.0.1:$rport/0 -e SCRIBEHOOK_API_KEY -e SCRIBEHOOK_READ_TOKEN \
			localhost/scribehook:test >/dev/null 2>>"$work/podman.log"
		ctr+=(image-test-replica-$r)
	done
	for r in 1 2; do
		rp=r${r}port
		wait_ready "http://127.0.0.1:${!rp}/readyz" || fail "replica-$r never answered /readyz"
	done
	# lb_served PATH: the replicas the balancer's log says served requests for PATH.
	lb_served() { awk -v p="$1" '$NF == p {print $4}' "$work/haproxy.log" | sort -u | tr '\n' ' '; }
	# The balancer's health checks take both in (every 2 s; one may have been checked before it
	# listened): round robin then sends consecutive requests to both.
	for _ in $(seq 50); do
		curl -s -o /dev/null "http://127.0.0.1:$lbport/readyz"
		[ "$(lb_served /readyz)" = "replicas/replica-1 replicas/replica-2 " ] && break
		sleep 0.2
	done
	submit_via() { # submit_via REPLICA: a job submitted there and waited for; prints its id
		local out
		out=$(podman "${podman_s[@]}" exec image-test-$1 /scribehook submit --audio-url "http://127.0.0.1:$fsport/sample.wav" \
			--subtitles --wait --timeout 60s -o json 2>>"$work/submit.log") || fail "submit through $1: $out"
		python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])' <<<"$out"
	}
	job1=$(submit_via replica-1)
	# The subtitles through the balancer, twice: round robin asks both replicas, and both read
	# the shared volume.
	for _ in 1 2; do
		code=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $SCRIBEHOOK_READ_TOKEN" \
			"http://127.0.0.1:$lbport/v1/jobs/$job1/subtitles.srt")
		[ "$code" = 200 ] || fail "subtitles of $job1 through the balancer: $code"
	done
	served=$(lb_served "/v1/jobs/$job1/subtitles.srt")
	[ "$served" = "replicas/replica-1 replicas/replica-2 " ] || fail "the subtitles were served by $served, want both replicas"
	podman "${podman_s[@]}" kill -s KILL image-test-replica-2 >/dev/null
	job2=$(submit_via replica-1)
	done_jobs=$(curl -fsS -H "Authorization: Bearer $SCRIBEHOOK_READ_TOKEN" "http://127.0.0.1:$lbport/v1/jobs?status=done" |
		python3 -c 'import json,sys; print(" ".join(sorted(j["id"] for j in json.load(sys.stdin)["items"])))')
	for j in "$job1" "$job2"; do
		grep -q "$j" <<<"$done_jobs" || fail "job $j is not done in PostgreSQL (done: $done_jobs)"
	done
	# Callbacks went through the balancer, and its log keeps no token.
	callbacks=$(awk '$NF ~ /^\/v1\/callbacks\//' "$work/haproxy.log")
	[ -n "$callbacks" ] || fail "no callback went through the balancer"
	if grep -v ' /v1/callbacks/\[token\]$' <<<"$callbacks"; then fail "the balancer logged a callback token"; fi
	step "replicas: 2 from the image on PostgreSQL and Redis behind HAProxy (subtitles served by both, no token in its log); a job through them, then another with replica-2 killed ($((SECONDS - start)) s)"
else
	step "replicas topology: SKIPPED (it needs podman)"
fi

# --- 4. the systemd unit -------------------------------------------------------------------------
unit=$work/scribehook.service
sed "s#/usr/local/bin/scribehook#$bin#" deploy/systemd/scribehook.service >"$unit"
# Its output is the failure (fail prints $work/*.log); a non-zero exit must say FAIL too.
systemd-analyze verify "$unit" >"$work/verify.log" 2>&1 || fail "systemd-analyze verify exited non-zero"
[ -s "$work/verify.log" ] && fail "systemd-analyze verify found problems"
score=$(systemd-analyze security --offline=true "$unit" | sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p')
[ -n "$score" ] || fail "systemd-analyze security printed no exposure level"
awk -v s="$score" 'BEGIN {exit !(s <= 2.0)}' || fail "systemd unit exposure $score, want at most 2.0"
step "systemd unit: verify clean, exposure $score"

# --- 5. the balancer of deploy/compose.yaml ------------------------------------------------------
# (The compose file's services cannot be run here: their base images cannot be pulled.
# deploy/deploy_test.go checks that its files agree; HAProxy checks its own configuration.)
# (It warns that the replicas' names do not resolve outside compose's network.)
out=$(haproxy -c -f deploy/compose/haproxy.cfg 2>&1) || fail "haproxy -c deploy/compose/haproxy.cfg: $out"
step "deploy/compose/haproxy.cfg: valid"
step "PASS ($mode, $((SECONDS - start)) s)"
