#!/usr/bin/env bash
# Renders a frame in bands, or a turntable animation frame by frame, as one Slurm array
# job, then merges the results in a job that runs once every task has succeeded
# (--dependency=afterok). Waits for both; exits 1 naming the tasks that failed.
#
#   contrib/slurm/render.sh [SCENE] -o OUT [--bands N] [--orbit DEGREES --frames F]
#       [--fps N] [--sbatch "FLAGS"] [--work DIR] [any `theia render` options]
#
#   --bands N          split each frame into N bands (`theia render --band K/N`), one task each
#   --orbit D --frames F
#                      a turntable of F frames, one task per frame (per band of a frame
#                      with --bands); OUT is the animation: .png (APNG) or .gif
#   --fps N            the animation's frame rate (default 24)
#   --sbatch "FLAGS"   extra sbatch flags for both jobs, e.g. "--partition=gpu --time=1:00:00"
#   --work DIR         where parts, frames and logs go (default: OUT's name + .parts)
#
# SCENE is omitted for the built-in scene. Every path (SCENE, OUT, --work, the theia binary)
# must be on a filesystem all nodes share; the script makes them absolute. The theia binary
# is $THEIA, else `theia` on PATH, else target/release/theia of this checkout.
set -euo pipefail

usage() {
    sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'
    exit 0
}
fail() {
    echo "render.sh: $*" >&2
    exit 2
}

scene="" output="" bands="" orbit="" frames="" fps=24 sbatch_flags="" work=""
render_options=()
while [ $# -gt 0 ]; do
    case "$1" in
        -o | --output) output="${2:?-o needs a file}"; shift 2 ;;
        --bands) bands="${2:?--bands needs a number}"; shift 2 ;;
        --orbit) orbit="${2:?--orbit needs degrees}"; shift 2 ;;
        --frames) frames="${2:?--frames needs a number}"; shift 2 ;;
        --fps) fps="${2:?--fps needs a number}"; shift 2 ;;
        --sbatch) sbatch_flags="${2?--sbatch needs flags}"; shift 2 ;;
        --work) work="${2:?--work needs a directory}"; shift 2 ;;
        --band | --frame | --watch) fail "$1 is chosen per task by the script" ;;
        -h | --help) usage ;;
        -*) render_options+=("$1"); shift ;;
        *)
            if [ -z "$scene" ] && [ ${#render_options[@]} -eq 0 ]; then
                scene="$1"
            else
                render_options+=("$1")
            fi
            shift
            ;;
    esac
done

[ -n "$output" ] || fail "give the output: -o OUT"
is_count() { [[ "$1" =~ ^[1-9][0-9]*$ ]]; }
[ -z "$bands" ] || is_count "$bands" || fail "--bands $bands: expected a positive number"
if [ -n "$orbit$frames" ]; then
    [ -n "$orbit" ] && [ -n "$frames" ] || fail "--orbit and --frames go together"
    is_count "$frames" || fail "--frames $frames: expected a positive number"
    case "$output" in
        *.png | *.PNG | *.gif | *.GIF) ;;
        *) fail "$output: an animation is written as .png (APNG) or .gif" ;;
    esac
fi
[ -n "$bands$orbit" ] || fail "nothing to split: give --bands N, or --orbit D --frames F"
bands="${bands:-1}"
frames="${frames:-1}"

theia="${THEIA:-}"
if [ -z "$theia" ]; then
    theia="$(command -v theia || true)"
fi
if [ -z "$theia" ]; then
    theia="$(cd "$(dirname "$0")/../.." && pwd)/target/release/theia"
fi
[ -x "$theia" ] || fail "$theia: no theia binary there (set THEIA=/path/to/theia)"
theia="$(realpath "$theia")"

for command in sbatch squeue scancel; do
    command -v "$command" >/dev/null || fail "$command not found: is this a Slurm login node?"
done

absolute() { realpath -m -- "$1"; }
output="$(absolute "$output")"
if [ -n "$scene" ]; then
    [ -e "$scene" ] || fail "$scene: no such file or directory"
    scene="$(absolute "$scene")"
fi
work="$(absolute "${work:-${output%.*}.parts}")"
mkdir -p "$work/logs" "$work/status" "$(dirname "$output")"
rm -f "$work"/status/* "$work"/band-*.png "$work"/frame-*.png

tasks=$((bands * frames))
# Shell-quoted words, for the generated scripts.
quoted() { if [ $# -gt 0 ]; then printf '%q ' "$@"; fi; }
q() { printf '%q' "$1"; }
# Without an orbit a task always renders a band (--bands 1: the whole frame as band 0/1).
split_frames=0
if [ -z "$orbit" ] || [ "$bands" -gt 1 ]; then split_frames=1; fi
scene_args=()
[ -z "$scene" ] || scene_args=("$scene")

# One task: band (id mod N) of frame (id div N). Its exit status is recorded beside the
# log, so failures are found without Slurm's accounting database.
cat >"$work/task.sh" <<EOF
#!/usr/bin/env bash
set -u
id=\${SLURM_ARRAY_TASK_ID:?not run as an array task}
band=\$((id % $bands)) frame=\$((id / $bands))
trap 'echo \$? > $(q "$work")/status/task-\$id' EXIT
args=(render $(quoted "${scene_args[@]}" "${render_options[@]}"))
if [ -n $(q "$orbit") ]; then
    args+=(--orbit $(q "$orbit") --frames $frames --frame \$frame)
fi
name=$(q "$work")/frame-\$(printf %04d \$frame)
if [ $split_frames = 1 ]; then
    args+=(--band \$band/$bands -o "\$name.band-\$(printf %04d \$band).png")
else
    args+=(-o "\$name.png")
fi
echo "task \$id on \$(hostname): theia \${args[*]}"
$(q "$theia") "\${args[@]}"
EOF

# The merge: each frame's bands into the frame, then the frames into the animation.
cat >"$work/merge.sh" <<EOF
#!/usr/bin/env bash
set -eu
trap 'echo \$? > $(q "$work")/status/merge' EXIT
theia=$(q "$theia")
work=$(q "$work")
output=$(q "$output")
if [ -z $(q "$orbit") ]; then
    "\$theia" merge "\$work"/frame-0000.band-*.png -o "\$output"
    exit
fi
if [ $split_frames = 1 ]; then
    for frame in \$(seq -f %04g 0 $((frames - 1))); do
        "\$theia" merge -q "\$work"/frame-\$frame.band-*.png -o "\$work/frame-\$frame.png"
    done
fi
"\$theia" merge --animate --fps $fps "\$work"/frame-????.png -o "\$output"
EOF
chmod +x "$work/task.sh" "$work/merge.sh"

# shellcheck disable=SC2086 # --sbatch's flags are split on purpose
array=$(sbatch --parsable --job-name=theia-render --array="0-$((tasks - 1))" \
    --output="$work/logs/task-%a.out" --chdir="$PWD" $sbatch_flags "$work/task.sh")
array="${array%%;*}"
# shellcheck disable=SC2086
merge=$(sbatch --parsable --job-name=theia-merge --dependency="afterok:$array" \
    --kill-on-invalid-dep=yes --output="$work/logs/merge.out" --chdir="$PWD" \
    $sbatch_flags "$work/merge.sh")
merge="${merge%%;*}"
echo "submitted array job $array ($tasks tasks: $frames frame(s) x $bands band(s)) and merge job $merge (afterok:$array); work in $work"

# Until Slurm lists neither job. Ctrl-C cancels both.
trap 'scancel "$array" "$merge" 2>/dev/null; exit 130' INT TERM
listed() { squeue --noheader --jobs="$1" --format=%i 2>/dev/null || true; }
any_failed() {
    local status
    for status in "$work"/status/task-*; do
        if [ -e "$status" ] && [ "$(cat "$status")" != 0 ]; then return 0; fi
    done
    return 1
}
while [ -n "$(listed "$array,$merge")" ]; do
    # A failed task means the merge never runs: stop waiting for it once the array is done.
    if any_failed && [ -z "$(listed "$array")" ]; then break; fi
    sleep "${RENDER_SH_POLL:-1}"
done

failed=()
for ((id = 0; id < tasks; id++)); do
    what="band $((id % bands))/$bands of frame $((id / bands))"
    [ -z "$orbit" ] && what="band $id/$bands"
    [ -n "$orbit" ] && [ "$bands" = 1 ] && what="frame $id"
    status="$work/status/task-$id"
    log="$work/logs/task-$id.out"
    if [ ! -e "$status" ]; then
        failed+=("task $id ($what) did not finish: cancelled, out of time or lost with its node; see $log")
    elif [ "$(cat "$status")" != 0 ]; then
        failed+=("task $id ($what) failed with exit status $(cat "$status"): $(grep -m1 '^error' "$log" || tail -n1 "$log")")
    fi
done
if [ ${#failed[@]} -gt 0 ]; then
    scancel "$merge" 2>/dev/null || true
    echo "render.sh: array job $array: ${#failed[@]} of $tasks tasks failed; the merge job $merge did not run" >&2
    printf '  %s\n' "${failed[@]}" >&2
    exit 1
fi
grep -h -v '^task ' "$work"/logs/task-*.out | sed 's/^/  /' || true
merge_status="$(cat "$work/status/merge" 2>/dev/null || echo none)"
if [ "$merge_status" != 0 ]; then
    echo "render.sh: the merge job $merge failed (exit status $merge_status); see $work/logs/merge.out:" >&2
    tail -n5 "$work/logs/merge.out" >&2 || true
    exit 1
fi
cat "$work/logs/merge.out"
