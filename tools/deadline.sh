# Sourced by the GPU batch scripts. The device call's own limit is 600 s and a killed call
# returns nothing: steps stop at DEADLINE seconds after the start (each step's `timeout` is
# cut to what is left, and a step with under 20 s left is skipped).
T0=$(date +%s)
DEADLINE=${DEADLINE:-540}
timeout() {
  local left=$(( DEADLINE - ($(date +%s) - T0) ))
  local want=$1; shift
  if (( left < 20 )); then echo "skipped: out of time" >&2; return 124; fi
  command timeout $(( want < left ? want : left )) "$@"
}
