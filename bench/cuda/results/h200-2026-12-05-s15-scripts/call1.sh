#!/usr/bin/env bash
# Session 15's call 1 (carry [".gpu/s13a"]: session 13's "all" binaries, s13_ab and the conformance vectors, xz'd
# from build_local.sh's build directory before its other configurations had finished): session 13's call1.sh as it
# stands, with its carry directory named.
S=${S:-.gpu/s13a} exec bash "$(dirname "$0")/../h200-2026-12-04-s13-scripts/call1.sh"
