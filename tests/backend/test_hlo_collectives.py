"""Reading collectives and their scheduled overlap from compiled HLO text (GPU-style async
pairs written here in HLO syntax; the real CPU program is in tests/multidevice)."""

from purejit.backend.hlo_collectives import collectives

GPU_STYLE = """
HloModule step, is_scheduled=true, entry_computation_layout={(bf16[1024,512]{1,0})->bf16[1024,512]{1,0}}

%add.clone (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %add = f32[] add(%x, %y)
}

%fused_computation (p0: bf16[4096,512], p1: bf16[512,512]) -> bf16[4096,512] {
  %p0 = bf16[4096,512]{1,0} parameter(0)
  %p1 = bf16[512,512]{1,0} parameter(1)
  ROOT %dot.1 = bf16[4096,512]{1,0} dot(%p0, %p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}

%async_rs (p: bf16[4096,512]) -> bf16[1024,512] {
  %p = bf16[4096,512]{1,0} parameter(0)
  ROOT %reduce-scatter.7 = bf16[1024,512]{1,0} reduce-scatter(%p), channel_id=4, replica_groups={{0,1,2,3}}, dimensions={0}, to_apply=%add.clone
}

%body (state: (s32[], bf16[1024,512])) -> (s32[], bf16[1024,512]) {
  %state = (s32[], bf16[1024,512]{1,0}) parameter(0)
  %i = s32[] get-tuple-element(%state), index=0
  %v = bf16[1024,512]{1,0} get-tuple-element(%state), index=1
  %collective-permute-start.2 = (bf16[1024,512]{1,0}, bf16[1024,512]{1,0}) collective-permute-start(%v), channel_id=5, source_target_pairs={{0,1},{1,2},{2,3},{3,0}}
  %collective-permute-done.2 = bf16[1024,512]{1,0} collective-permute-done(%collective-permute-start.2)
  %one = s32[] constant(1)
  %next = s32[] add(%i, %one)
  ROOT %t = (s32[], bf16[1024,512]{1,0}) tuple(%next, %collective-permute-done.2)
}

%cond (state.1: (s32[], bf16[1024,512])) -> pred[] {
  %state.1 = (s32[], bf16[1024,512]{1,0}) parameter(0)
  %k = s32[] get-tuple-element(%state.1), index=0
  %three = s32[] constant(3)
  ROOT %lt = pred[] compare(%k, %three), direction=LT
}

ENTRY %main (x: bf16[1024,512]) -> bf16[1024,512] {
  %x = bf16[1024,512]{1,0} parameter(0)
  %all-gather-start = (bf16[1024,512]{1,0}, bf16[4096,512]{1,0}) all-gather-start(%x), channel_id=1, replica_groups={{0,1,2,3}}, dimensions={0}
  %w = bf16[512,512]{1,0} constant({...})
  %all-reduce-start.1 = bf16[512,512]{1,0} all-reduce-start(%w), channel_id=2, replica_groups={{0,1,2,3}}, to_apply=%add.clone
  %fusion.3 = bf16[1024,512]{1,0} fusion(%x, %w), kind=kLoop, calls=%fused_computation
  %all-gather-done = bf16[4096,512]{1,0} all-gather-done(%all-gather-start)
  %all-reduce-done.1 = bf16[512,512]{1,0} all-reduce-done(%all-reduce-start.1)
  %fusion.4 = bf16[4096,512]{1,0} fusion(%all-gather-done, %all-reduce-done.1), kind=kCustom, calls=%fused_computation
  %reduce-scatter-start = ((bf16[4096,512]{1,0}), bf16[1024,512]{1,0}) async-start(%fusion.4), calls=%async_rs
  %reduce-scatter-done = bf16[1024,512]{1,0} async-done(%reduce-scatter-start)
  %all-to-all.9 = bf16[1024,512]{1,0} all-to-all(%reduce-scatter-done), channel_id=6, replica_groups={{0,1,2,3}}, dimensions={0}
  %zero = s32[] constant(0)
  %init = (s32[], bf16[1024,512]{1,0}) tuple(%zero, %all-to-all.9)
  %while.1 = (s32[], bf16[1024,512]{1,0}) while(%init), condition=%cond, body=%body
  ROOT %out = bf16[1024,512]{1,0} get-tuple-element(%while.1), index=1
}
"""


def test_async_pairs_sync_ops_and_loop_bodies():
    got = {c.name: c for c in collectives(GPU_STYLE)}
    assert list(got) == [
        "all-gather-start",
        "all-reduce-start.1",
        "reduce-scatter-start",
        "all-to-all.9",
        "collective-permute-start.2",
    ]
    ag, ar = got["all-gather-start"], got["all-reduce-start.1"]
    # fusion.3 runs while both transfers are in flight; the other start/done do not count
    assert ag.kind == "all-gather" and ag.asynchronous and ag.overlapped
    assert ag.ops_between == 1 and ag.between == ("fusion",)
    assert ar.kind == "all-reduce" and ar.overlapped and ar.ops_between == 1
    rs = got["reduce-scatter-start"]  # async-start wrapping a reduce-scatter computation
    assert rs.kind == "reduce-scatter" and rs.asynchronous and not rs.overlapped
    a2a = got["all-to-all.9"]
    assert a2a.kind == "all-to-all" and not a2a.asynchronous and not a2a.overlapped
    cp = got["collective-permute-start.2"]  # inside the while body: nothing between
    assert cp.kind == "collective-permute" and cp.computation == "body"
    assert cp.asynchronous and not cp.overlapped
    assert "async, overlaps 1 op(s) (fusion)" in str(ag)
    assert "synchronous" in str(a2a) and "not overlapped" in str(cp)


def test_a_done_matches_its_own_start_only():
    text = """
ENTRY %main (x: f32[8]) -> f32[8] {
  %x = f32[8]{0} parameter(0)
  %all-reduce-start = f32[8]{0} all-reduce-start(%x), channel_id=1, to_apply=%add
  %all-reduce-start.1 = f32[8]{0} all-reduce-start(%x), channel_id=2, to_apply=%add
  %all-reduce-done.1 = f32[8]{0} all-reduce-done(%all-reduce-start.1)
  %neg = f32[8]{0} negate(%all-reduce-done.1)
  %all-reduce-done = f32[8]{0} all-reduce-done(%all-reduce-start)
  ROOT %sum = f32[8]{0} add(%neg, %all-reduce-done)
}
"""
    a, b = collectives(text)
    # `%all-reduce-start` is a prefix of `%all-reduce-start.1`: only its own done ends it
    assert (a.name, a.ops_between, a.between) == ("all-reduce-start", 1, ("negate",))
    assert (b.name, b.ops_between) == ("all-reduce-start.1", 0)
