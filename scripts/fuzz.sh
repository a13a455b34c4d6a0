#!/usr/bin/env bash
# Runs every Go fuzz target of the module, one after the other, each for a short time, and
# fails when one finds a crash. The crashing input is written by Go to
# <package>/testdata/fuzz/<Target>/<hash>: keep it (CI: upload it), fix the bug, commit the file
# as a regression seed.
#
# Usage: scripts/fuzz.sh [-t PER_TARGET] [-T TOTAL] [-p PACKAGES] [-r REGEXP] [-l] [PER_TARGET]
#   -t  fuzzing time of each target, a Go duration (default 10s; env FUZZTIME)
#   -T  bound of the whole run, builds included (default: none; env FUZZ_TOTAL). Each target's
#       time shrinks (to 1s at least) so that the targets still to run fit in what is left;
#       targets left when the bound is reached are not run, and the script then exits 2.
#   -p  packages to search, as for go list (default ./...; env FUZZ_PKGS)
#   -r  run only the targets whose name matches this extended regexp (env FUZZ_MATCH)
#   -l  list the targets and exit
# Exit status: 0 all targets ran clean; 1 a target failed (crash, invariant, build error);
# 2 the total bound left targets unrun. A run that Go ends with "context deadline exceeded" and
# no failing input (golang/go#75804, a race in Go's fuzzing before 1.27) is reported as FLAKE and
# does not fail the script.
#
# CI (2 cores, about 5 minutes for 21 targets): scripts/fuzz.sh -t 8s -T 6m
set -euo pipefail

usage() { sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; }

per=${FUZZTIME:-10s}
total=${FUZZ_TOTAL:-}
pkgs=${FUZZ_PKGS:-./...}
match=${FUZZ_MATCH:-}
list=0
while getopts "t:T:p:r:lh" opt; do
  case $opt in
    t) per=$OPTARG ;;
    T) total=$OPTARG ;;
    p) pkgs=$OPTARG ;;
    r) match=$OPTARG ;;
    l) list=1 ;;
    h) usage; exit 0 ;;
    *) usage >&2; exit 64 ;;
  esac
done
shift $((OPTIND - 1))
# The former usage, scripts/fuzz.sh 20s, still sets the time of each target.
(($# > 0)) && per=$1

# seconds turns a Go duration made of h, m and s parts (10s, 4m, 1m30s, 90) into seconds.
seconds() {
  local d=$1 n=0 rest
  if [[ $d =~ ^[0-9]+$ ]]; then echo "$d"; return; fi
  if ! [[ $d =~ ^([0-9]+h)?([0-9]+m)?([0-9]+s)?$ ]] || [[ -z $d ]]; then
    echo "fuzz.sh: $d is not a duration such as 10s, 4m or 1m30s" >&2
    exit 64
  fi
  rest=$d
  [[ $rest =~ ([0-9]+)h ]] && n=$((n + BASH_REMATCH[1] * 3600))
  [[ $rest =~ ([0-9]+)m ]] && n=$((n + BASH_REMATCH[1] * 60))
  [[ $rest =~ ([0-9]+)s ]] && n=$((n + BASH_REMATCH[1]))
  echo "$n"
}

per_s=$(seconds "$per")
total_s=0
[[ -n $total ]] && total_s=$(seconds "$total")
((per_s >= 1)) || { echo "fuzz.sh: -t must be at least 1s" >&2; exit 64; }

cd "$(dirname "$0")/.."

# Targets as "import/path Dir FuzzName", in package order.
targets=()
while read -r pkg dir; do
  for f in "$dir"/*_test.go; do
    [[ -e $f ]] || continue
    while read -r name; do
      [[ -z $match || $name =~ $match ]] && targets+=("$pkg $dir $name")
    done < <(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*\*testing\.F).*/\1/p' "$f")
  done
done < <(go list -f '{{.ImportPath}} {{.Dir}}' $pkgs)

if ((${#targets[@]} == 0)); then
  echo "fuzz.sh: no fuzz target found in $pkgs${match:+ matching $match}" >&2
  exit 1
fi
if ((list)); then
  printf '%s\n' "${targets[@]}" | awk '{print $1, $3}'
  exit 0
fi

start=$SECONDS
# overhead is what a target costs beyond its fuzzing time (build, link, baseline coverage): 6s
# until measured, then what the last target took (the first builds take longer than the rest).
overhead=6
failed=() skipped=() flaky=() summary=()
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for i in "${!targets[@]}"; do
  read -r pkg dir name <<<"${targets[$i]}"
  left=$((${#targets[@]} - i))
  t=$per_s
  if ((total_s > 0)); then
    remaining=$((total_s - (SECONDS - start)))
    if ((remaining <= 0)); then
      skipped+=("$pkg $name")
      summary+=("$(printf '%-9s %-50s %s' SKIPPED "$pkg" "$name")")
      continue
    fi
    fit=$((remaining / left - overhead))
    ((fit < t)) && t=$fit
    ((t < 1)) && t=1
  fi
  echo "== $pkg $name (${t}s)"
  began=$SECONDS
  corpus=$dir/testdata/fuzz/$name
  before=$(ls "$corpus" 2>/dev/null || true)
  # -timeout guards against a hang; a crash exits non-zero and leaves its input in testdata.
  if go test -run='^$' -fuzz="^${name}\$" -fuzztime="${t}s" -timeout="$((t + 300))s" "$pkg" 2>&1 | tee "$out"; then
    result=ok
  elif [[ $(ls "$corpus" 2>/dev/null || true) == "$before" ]] &&
    grep -qx '[[:space:]]*context deadline exceeded' "$out" && ! grep -q 'Failing input written to' "$out"; then
    # Go before 1.27 may fail a run at the -fuzztime deadline with no input at fault
    # (golang/go#75804): not a finding.
    result=FLAKE
    flaky+=("$pkg $name")
  else
    result=FAIL
    failed+=("$pkg $name")
  fi
  took=$((SECONDS - began))
  overhead=$((took - t > 2 ? took - t : 2))
  summary+=("$(printf '%-9s %-50s %-28s %ss' "$result" "$pkg" "$name" "$took")")
done

echo
echo "fuzz summary (${per_s}s per target${total:+, bound $total}, $((SECONDS - start))s in all):"
printf '  %s\n' "${summary[@]}"
if ((${#flaky[@]} > 0)); then
  echo "fuzz: ${#flaky[@]} target(s) stopped with the Go fuzzing deadline race (golang/go#75804), no input at fault" >&2
fi
if ((${#failed[@]} > 0)); then
  echo "fuzz: ${#failed[@]} target(s) failed; their inputs are under <package>/testdata/fuzz/<Target>/" >&2
  exit 1
fi
if ((${#skipped[@]} > 0)); then
  echo "fuzz: ${#skipped[@]} target(s) not run within the bound of $total: raise -T or lower -t" >&2
  exit 2
fi
