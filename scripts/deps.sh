#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Installs the Debian packages sluice's build, tests and benchmarks use,
# only those missing (apt-get update runs only if something is missing).
set -eu
# What the build needs (README "Building and installing" lists exactly
# these; tests/integration/test_readme_needs.py compares the two).
build=(gcc make pkg-config libc6-dev libconfuse-dev libsodium-dev libhttp-parser-dev
       libnghttp2-dev libhiredis-dev libssl-dev libmicrohttpd-dev libjansson-dev)
# What the tests and benchmarks add: real programs to run under sluice.
tests=(libcmocka-dev clang libclang-rt-14-dev python3 curl nginx-light wrk procps iproute2
       redis-server redis-tools redis-sentinel nodejs util-linux openssl python3-requests
       python3-prometheus-client man-db debhelper dpkg-dev fakeroot faketime wget
       libnginx-mod-http-image-filter
       prometheus chromium chromium-driver python3-selenium
       php-cli php-curl golang-go python3-aiohttp python3-httpx
       ruby libwww-perl liblwp-protocol-https-perl openjdk-17-jdk-headless
       memcached haproxy lighttpd socat nghttp2-client libpython3.11-testsuite nghttp2-server
       python3-uvicorn python3-uvloop
       apache2 puma gunicorn lighttpd-mod-openssl lighttpd-mod-gnutls
       python3-grpcio
       )
pkgs=("${build[@]}" "${tests[@]}")
missing=()
for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" != 0 ]; then
    echo "sluice: missing packages: ${missing[*]} (run as root, or install them)" >&2
    exit 1
fi
echo "sluice: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
