#!/usr/bin/env bash
# The demo on the embedded S&P 500 data with the embedded TPE proposer: two short research
# sessions, then the continuous loop on the first one's winner: the policy library, a
# deployment check (pm run must equal the evaluator's backtest), one live paper tick, the
# decision awaiting review, and the preference pairs the journal yields.
set -euo pipefail
BIN=${BIN:-.venv/bin}
A="$BIN/alphaloop"
field() { "$BIN/python" -c "import json, sys; d = json.load(sys.stdin); print($1)"; }

"$A" research "maximise Sharpe, max drawdown under 25%" --mode cufolio_only \
  --budget 12 --max-drawdown 0.25 --proposer tpe
session=$("$A" sessions --json | field 'd[0]["id"]')
"$A" research "maximise Sharpe with PPO under a CVaR overlay" --mode unified \
  --budget 4 --proposer tpe
"$A" sessions

"$A" policies list
policy=$("$A" policies list --json \
  | field "next(p['id'] for p in d['policies'] if p['session_id'] == '$session')")
# A short demo session may not earn a GO from its gates: then the demo overrides, on the record.
"$A" policies activate "$policy" \
  || "$A" policies activate "$policy" --force --reason "demo: shows the loop on a short session"
"$A" pm run --start 2022-07-01 --end 2022-12-28
"$A" pm tick --date 2022-12-28
"$A" pm review
"$A" prefs extract
"$A" prefs stats
