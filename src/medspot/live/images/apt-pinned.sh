#!/bin/sh
# Install Debian packages given as NAME=VERSION (pinned) or NAME, after checking that apt can
# provide every pinned version; exit 3 naming each one it cannot (medspot/live/images/build.py
# reads the `medspot-pin:` lines). Runs inside an image build.
set -eu
apt-get update -qq
missing=0
for spec in "$@"; do
  name=${spec%%=*}
  [ "$name" = "$spec" ] && continue
  want=${spec#*=}
  have=$(apt-cache madison "$name" 2>/dev/null | awk -F'|' '{gsub(/ /, "", $2); print $2}')
  if ! printf '%s\n' "$have" | grep -qxF -- "$want"; then
    echo "medspot-pin: $name $want is not available from the image's apt sources" \
      "(they offer: $(printf '%s' "$have" | tr '\n' ' ' | sed 's/ *$//' | sed 's/^$/nothing/'))" >&2
    missing=1
  fi
done
[ "$missing" = 0 ] || exit 3
apt-get install -y -qq --no-install-recommends "$@"
rm -rf /var/lib/apt/lists/*
