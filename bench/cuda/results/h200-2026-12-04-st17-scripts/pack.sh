#!/usr/bin/env bash
# Copies this worktree to /work/main/.gpu/st17 (DEVICE.md) with build_local.sh's objects xz'd under objs/.
set -eu
N=st17; D=/work/main/.gpu/$N
rm -rf $D && mkdir -p $D/objs
git -C /work/wt/$N ls-files -co --exclude-standard | tar -C /work/wt/$N -cf - -T - | tar -C $D -xf -
for u in backward_phases.inst delta.inst gated_delta.inst main st17_backward16_test grad_ab_gated_delta grad_ab_delta; do
  xz -T2 -3 -c /tmp/st17/obj/$u.o > $D/objs/$u.o.xz; done
du -sh $D $D/objs
