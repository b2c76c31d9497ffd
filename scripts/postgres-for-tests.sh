#!/usr/bin/env bash
# Print the SMARTFLOW_PG_URL the store tests should use, installing PostgreSQL when it is missing.
#
# The store tests run on SQLite always and, with SMARTFLOW_PG_URL=temp, also on a throwaway local
# PostgreSQL server they start themselves (tests/store/pg_server.py). A caller that already has a
# server passes its URL through SMARTFLOW_PG_URL and this script just echoes it.
set -u
if [ -n "${SMARTFLOW_PG_URL:-}" ]; then echo "$SMARTFLOW_PG_URL"; exit 0; fi
if ! ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing PostgreSQL (Debian package postgresql) for the store tests" >&2
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
        --no-install-recommends postgresql; } >&2 || true
  fi
fi
if ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1; then
  echo temp
else
  echo "NOTE: PostgreSQL is not installed and cannot be installed here (needs root + apt-get):" \
       "the store tests run on SQLite only. Set SMARTFLOW_PG_URL to a server URL to include it." >&2
fi
