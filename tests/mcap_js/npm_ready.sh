# Sourced by the run_*.sh scripts of tests/mcap_js (which define `fail` first):
#   npm_ready <script name>
# checks that node (>= 18) and npm are on PATH (scripts/setup installs them) and runs `npm ci`
# in tests/mcap_js when node_modules is missing or older than package-lock.json, so repeat runs
# need no network. The tests run in parallel: one `npm ci` at a time (flock), and the stamp is
# written only after a successful one, so a half-finished install is redone.
npm_ready() {
  local who=$1 dir
  dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
  command -v node >/dev/null || fail "node not found on PATH; install Node.js >= 18 (scripts/setup does: apt-get install nodejs npm)"
  command -v npm >/dev/null || fail "npm not found on PATH; install npm (scripts/setup does: apt-get install npm)"
  local major
  major="$(node -p 'process.versions.node.split(".")[0]')"
  [ "$major" -ge 18 ] || fail "node $(node --version) is too old; the npm readers need Node.js >= 18"
  local stamp="$dir/node_modules/.edgevla-npm-ci-stamp"
  (
    flock 9
    if [ ! -f "$stamp" ] || [ "$dir/package-lock.json" -nt "$stamp" ]; then
      echo "$who: npm ci in $dir (node $(node --version), npm $(npm --version))"
      npm ci --prefix "$dir" --no-audit --no-fund --loglevel=error ||
        { echo "$who: npm ci failed (is the npm registry reachable? see the npm output above)" >&2; exit 1; }
      touch "$stamp"
    fi
  ) 9>"$dir/package-lock.json.lock" || fail "npm ci failed"
}
