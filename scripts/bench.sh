#!/usr/bin/env bash
# The benchmark suite: builds Release if needed, writes random-weight checkpoints of real model
# shapes (cached), measures the machine's bandwidth and FMA peak, runs pp64, pp512 and tg128 on
# every checkpoint, and writes a Markdown report and a chart (gnuplot) against the bandwidth and
# arithmetic bounds. With LLAMA_BENCH=/path/to/llama-bench the same GGUF files also go through
# llama.cpp's llama-bench, alternating with oxinfer file by file, and the report compares them.
#
#   scripts/bench.sh [--quick] [--out DIR] [-t N] [-r N] [--models-dir DIR] [--no-build]
#   LLAMA_BENCH=~/llama.cpp/build/bin/llama-bench scripts/bench.sh
#
# --quick: Qwen3-0.6B in bf16 and q4_k only, 2 repetitions: about 2 minutes on 2 cores, 4-10
# with llama.cpp (its bf16 is slow on AVX2). The full run (the four shapes, bf16/q8_0/q4_k, 5
# repetitions): about 50 minutes on 2 cores, about 90 with llama.cpp. Run it on an idle machine:
# other load changes these numbers a lot.
set -euo pipefail
cd "$(dirname "$0")/.."

# The model shapes: "label arch shape" (shape: an `oxinfer synth --shape` name, or a
# config.json path for --config).
BENCH_MODELS=(
  "Qwen3-0.6B qwen3 qwen3-0.6b"
  "Llama-3.2-1B llama llama-3.2-1b"
  "Qwen3.5-0.8B qwen35 qwen3.5-0.8b"
  "Gemma-4-E2B gemma4 gemma-4-e2b"
)
BENCH_TYPES=(bf16 q8_0 q4_k)
QUICK_MODELS=("${BENCH_MODELS[0]}")
QUICK_TYPES=(bf16 q4_k)
PP_SIZES=(64 512)  # prompt lengths (ppN)
TG_SIZE=128        # generated tokens (tgN)

usage() {
  cat <<'EOF'
usage: scripts/bench.sh [--quick] [--out DIR] [-t N] [-r N] [--models-dir DIR] [--no-build]

  --quick            Qwen3-0.6B in bf16 and q4_k only, 2 repetitions
  --out DIR          where performance-report.md and performance.png go (default docs)
  -t, --threads N    threads for both engines (default: physical cores)
  -r, --reps N       repetitions per test (default 5, --quick 2)
  --models-dir DIR   cache of the synth checkpoints (default build/bench-models)
  --model "LABEL ARCH SHAPE|CONFIG.json"   benchmark this shape instead of the built-in list
                     (repeatable)
  --types LIST       weight types, comma-separated (default bf16,q8_0,q4_k; --quick bf16,q4_k)
  -p LIST, -n N      prompt lengths (default 64,512) and generated tokens (default 128)
  --no-build         use build/cli/oxinfer as it is, even when older than the sources

LLAMA_BENCH=/path/to/llama-bench also runs llama.cpp on the same files.
EOF
}

die() { echo "bench.sh: error: $*" >&2; exit 1; }
log() { echo "[$(date +%H:%M:%S)] $*" >&2; }

quick=0 out_dir=docs threads="" reps="" models_dir=build/bench-models build=1 types="" pp="" tg=""
custom_models=()
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1 ;;
    --out) out_dir=${2:?--out needs a folder}; shift ;;
    -t|--threads) threads=${2:?-t needs a number}; shift ;;
    -r|--reps) reps=${2:?-r needs a number}; shift ;;
    --models-dir) models_dir=${2:?--models-dir needs a folder}; shift ;;
    --model) custom_models+=("${2:?--model needs \"LABEL ARCH SHAPE\"}"); shift ;;
    --types) types=${2:?--types needs a list}; shift ;;
    -p) pp=${2:?-p needs a list}; shift ;;
    -n) tg=${2:?-n needs a number}; shift ;;
    --no-build) build=0 ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; die "unknown argument '$1'" ;;
  esac
  shift
done

if [ $quick -eq 1 ]; then
  models=("${QUICK_MODELS[@]}"); type_list=("${QUICK_TYPES[@]}"); reps=${reps:-2}
else
  models=("${BENCH_MODELS[@]}"); type_list=("${BENCH_TYPES[@]}"); reps=${reps:-5}
fi
[ ${#custom_models[@]} -gt 0 ] && models=("${custom_models[@]}")
[ -n "$types" ] && IFS=, read -r -a type_list <<<"$types"
[ -n "$pp" ] && IFS=, read -r -a PP_SIZES <<<"$pp"
[ -n "$tg" ] && TG_SIZE=$tg
for n in "$reps" "$TG_SIZE" "${PP_SIZES[@]}" ${threads:+"$threads"}; do
  [[ "$n" =~ ^[0-9]+$ ]] || die "'$n' is not a number"
done
[ "$reps" -ge 1 ] || die "-r must be at least 1"

llama=${LLAMA_BENCH:-}
if [ -n "$llama" ]; then
  if [ ! -f "$llama" ] || [ ! -x "$llama" ]; then die "LLAMA_BENCH=$llama: not an executable file"; fi
fi
python=/usr/bin/python3
[ -x "$python" ] || python=$(command -v python3) || die "python3 is needed (Debian: apt-get install python3)"
helper=scripts/bench_report.py

# What was measured: the commit, "-dirty" when tracked files differ from it (taken now, before the
# long run, so that later edits do not change it).
commit=$(git rev-parse --short HEAD 2>/dev/null) || commit=unknown
if [ "$commit" != unknown ] && ! git diff --quiet HEAD -- 2>/dev/null; then commit="$commit-dirty"; fi
commit_note=""
date_utc=$(date -u '+%Y-%m-%d %H:%M UTC')
load_start=$(cut -d' ' -f1 /proc/loadavg 2>/dev/null || echo '?')

# Dependencies, plus gnuplot-nox for the chart (only this script needs it), then the binary.
source scripts/deps.sh
oxinfer_install_dependencies gnuplot-nox
command -v gnuplot >/dev/null 2>&1 || die "gnuplot is needed for the chart (Debian: apt-get install gnuplot-nox)"

oxinfer=build/cli/oxinfer
stale=""
if [ -x "$oxinfer" ]; then
  stale=$(find engine cli hub cmake CMakeLists.txt -type f -newer "$oxinfer" -print -quit 2>/dev/null || true)
fi
if [ $build -eq 1 ] && { [ ! -x "$oxinfer" ] || [ -n "$stale" ]; }; then
  log "building Release oxinfer (${stale:+$stale is newer than the binary}${stale:-no binary yet})"
  generator=()
  [ -f build/CMakeCache.txt ] || generator=(-G Ninja)  # as scripts/test.sh; an existing build keeps its own
  cmake -S . -B build "${generator[@]}" -DCMAKE_BUILD_TYPE=Release >&2 || die "cmake configure failed"
  cmake --build build -j"$(nproc)" --target oxinfer >&2 || die "build of oxinfer failed"
  stale=""
fi
[ -x "$oxinfer" ] || die "$oxinfer: missing (run without --no-build)"
commit_note="binary of $(date -u -r "$oxinfer" '+%Y-%m-%d %H:%M UTC')"
if [ -n "$stale" ]; then
  commit_note="$commit_note, not rebuilt: $stale is newer than it"
  log "warning: binary not rebuilt: $stale is newer than it"
fi

if [ -z "$threads" ]; then
  threads=$(lscpu -p=CORE,SOCKET 2>/dev/null | grep -v '^#' | sort -u | wc -l || true)
  [ "${threads:-0}" -ge 1 ] 2>/dev/null || threads=$(nproc)
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/oxinfer-bench.XXXXXX")
leftovers=()  # partial files outside $tmp, removed on any exit
cleanup() { rm -rf "$tmp" ${leftovers[@]+"${leftovers[@]}"}; }
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
mkdir -p "$tmp/runs" "$models_dir"
# Measure a copy, so that a rebuild of build/ during the run cannot mix two binaries (the engine
# is linked statically).
cp "$oxinfer" "$tmp/oxinfer" || die "cannot copy $oxinfer"
oxinfer=$tmp/oxinfer

# run DESCRIPTION OUT_FILE COMMAND...: stdout to OUT_FILE; on failure, the command's stderr and a
# clear error.
run() {
  local what=$1 outfile=$2 rc=0
  shift 2
  "$@" >"$outfile" 2>"$tmp/stderr" || rc=$?
  if [ $rc -ne 0 ]; then
    tail -n 20 "$tmp/stderr" >&2
    die "$what failed (exit $rc): $*"
  fi
}

# summarize ox|llama|kernels FILE: one line of progress; stops on JSON that is not what we expect.
summarize() {
  local line
  line=$("$python" "$helper" line "$1" "$2") || die "$2: unexpected output (see above)"
  log "  $line"
}

start=$SECONDS
pp_list=$(IFS=,; echo "${PP_SIZES[*]}")
log "oxinfer $commit, $threads threads, $reps repetitions, tests pp${pp_list//,/ pp} tg$TG_SIZE${llama:+, with llama.cpp}"

# 1. Checkpoints.
files=()
for spec in "${models[@]}"; do
  read -r label arch shape <<<"$spec"
  [ -n "$shape" ] || die "model spec '$spec' is not \"LABEL ARCH SHAPE\""
  if [[ "$shape" == *.json ]]; then
    [ -f "$shape" ] || die "$shape: no such config file"
    shape_args=(--config "$shape"); name=$(basename "$shape" .json)
  else
    shape_args=(--shape "$shape"); name=$shape
  fi
  for type in "${type_list[@]}"; do
    file="$models_dir/$name-$type.gguf"
    if [ ! -f "$file" ]; then
      log "synth $file"
      partial="$models_dir/.$name-$type.partial.gguf"
      leftovers=("$partial" "$partial.partial")  # the second: synth's own temporary file
      run "oxinfer synth of $label $type" /dev/null \
        "$oxinfer" synth --arch "$arch" "${shape_args[@]}" --type "$type" --out "$partial"
      mv -f "$partial" "$file"
      leftovers=()
    fi
    files+=("$label"$'\t'"$shape"$'\t'"$type"$'\t'"$file")
  done
done

# 2. Bandwidth and FMA peak (and the kernels of the types measured), before and after the models.
kernel_types=$(IFS=,; echo "${type_list[*]}")
log "oxinfer bench --kernels --types $kernel_types"
kernel_args=(bench --kernels --json -t "$threads" --types "$kernel_types")
[ $quick -eq 1 ] && kernel_args+=(--quick)
run "oxinfer bench --kernels" "$tmp/kernels-1.json" "$oxinfer" "${kernel_args[@]}"
summarize kernels "$tmp/kernels-1.json"

# 3. The models, oxinfer and llama.cpp alternating file by file (and which goes first alternating
# too), so that a slow phase of a shared machine does not hit only one of them.
bench_oxinfer() {  # KEY FILE LABEL TYPE
  local n
  for n in "${PP_SIZES[@]}"; do
    log "$3 $4: oxinfer pp$n"
    run "oxinfer bench of $2 (pp$n)" "$tmp/runs/$1/ox-pp$n.json" \
      "$oxinfer" bench --model "$2" -p "$n" -n 0 -r "$reps" -t "$threads" --json
    summarize ox "$tmp/runs/$1/ox-pp$n.json"
  done
  log "$3 $4: oxinfer tg$TG_SIZE"
  run "oxinfer bench of $2 (tg$TG_SIZE)" "$tmp/runs/$1/ox-tg$TG_SIZE.json" \
    "$oxinfer" bench --model "$2" -p 0 -n "$TG_SIZE" -r "$reps" -t "$threads" --bandwidth --json
  summarize ox "$tmp/runs/$1/ox-tg$TG_SIZE.json"
}
bench_llama() {  # KEY FILE LABEL TYPE
  log "$3 $4: llama-bench pp${pp_list//,/ pp} tg$TG_SIZE"
  run "llama-bench of $2" "$tmp/runs/$1/llama.json" \
    "$llama" -m "$2" -p "$pp_list" -n "$TG_SIZE" -t "$threads" -r "$reps" -o json
  summarize llama "$tmp/runs/$1/llama.json"
}

: >"$tmp/manifest.tsv"
i=0
for entry in "${files[@]}"; do
  IFS=$'\t' read -r label shape type file <<<"$entry"
  key=$(printf '%02d' "$i")
  mkdir -p "$tmp/runs/$key"
  run "oxinfer inspect of $file" "$tmp/runs/$key/inspect.json" "$oxinfer" inspect "$file" --json
  if [ -n "$llama" ] && [ $((i % 2)) -eq 1 ]; then
    bench_llama "$key" "$file" "$label" "$type"
    bench_oxinfer "$key" "$file" "$label" "$type"
  else
    bench_oxinfer "$key" "$file" "$label" "$type"
    [ -z "$llama" ] || bench_llama "$key" "$file" "$label" "$type"
  fi
  printf '%s\t%s\t%s\t%s\t%s\n' "$key" "$label" "$shape" "$type" "$file" >>"$tmp/manifest.tsv"
  i=$((i + 1))
done

# Once more after the models: the report takes the better of the two (other load lowers them).
log "oxinfer bench --kernels --types $kernel_types (again)"
run "oxinfer bench --kernels" "$tmp/kernels-2.json" "$oxinfer" "${kernel_args[@]}"
summarize kernels "$tmp/kernels-2.json"

# 4. Report and chart, written next to their final paths and moved into place only when both
# are complete.
mkdir -p "$out_dir"
report="$out_dir/performance-report.md"
chart="$out_dir/performance.png"
terminal=pngcairo
gnuplot -e 'set terminal' 2>&1 | grep -qw pngcairo || terminal=png
report_args=(report --work "$tmp" --report "$tmp/report.md" --chart-dir "$tmp"
  --chart-png "$(basename "$chart")" --terminal "$terminal" --commit "$commit"
  --commit-note "$commit_note" --date "$date_utc" --threads "$threads" --reps "$reps"
  --load-start "$load_start" --models-dir "$models_dir")
report_args+=(--elapsed "$((SECONDS - start))")
[ $quick -eq 1 ] && report_args+=(--quick)
[ -n "$llama" ] && report_args+=(--llama-bench "$llama" --llama-args "-p $pp_list -n $TG_SIZE")
run "the report (scripts/bench_report.py)" /dev/null "$python" "$helper" "${report_args[@]}"
run "the chart (gnuplot $tmp/chart.gp)" /dev/null gnuplot "$tmp/chart.gp"
[ -s "$tmp/chart.png" ] || die "gnuplot wrote no chart"
leftovers=("$report.tmp-$$" "$chart.tmp-$$")
cp "$tmp/report.md" "$report.tmp-$$"
cp "$tmp/chart.png" "$chart.tmp-$$"
mv -f "$chart.tmp-$$" "$chart"
mv -f "$report.tmp-$$" "$report"
leftovers=()

elapsed=$((SECONDS - start))
log "done in $((elapsed / 60)) min $((elapsed % 60)) s"
echo "report: $report"
echo "chart:  $chart"
