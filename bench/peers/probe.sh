#!/usr/bin/env bash
# The machine's FMA peak and triad bandwidth into RESULTS/probe-WHEN.json
# (build/bench/machine_probe's JSON; peer_costs.load_probes reads it), for
# run.sh and decode_run.sh, which take one before and one after their runs.
# Without the probe built (it comes with the benches), nothing is written and
# the reports show no floors.
#
#   bench/peers/probe.sh RESULTS WHEN
set -euo pipefail
[[ $# -eq 2 ]] || { echo "usage: probe.sh RESULTS WHEN" >&2; exit 2; }
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
probe_bin="${here}/../../build/bench/machine_probe"
[[ -x "${probe_bin}" ]] || exit 0
"${probe_bin}" > "$1/probe-$2.json" || { rm -f "$1/probe-$2.json"; exit 0; }
