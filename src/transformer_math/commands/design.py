"""``tmath design``: the chapter's six-step VLA design checklist (000:1344-1360), each step
answered with a number and the claim ids or calculators behind it (``theory.vla_design``).

Defaults are the chapter's scene (1e9 tokens, 800 tasks, 30 Hz, an edge chip) with a horizon of
300 steps (the chapter: "数百步"). Examples::

    tmath design --tokens 1e9 --tasks 800 --hz 30 --horizon 300
    tmath design --tokens 1e9 --tasks 800 --hz 30 --hardware h100-sxm --json
    tmath design --hz 50 --tflops 100 --bandwidth 400 --chunk-eps 0.02
    tmath design --results results.json     # quote verdicts and measured M*, chunking numbers
"""

from __future__ import annotations

import sys

import typer

from transformer_math.commands.args import fail, input_file, integer, json_text, number

DEFAULT_HARDWARE = "jetson-agx-orin-64gb"


def design(
    tokens: float = typer.Option(1e9, "--tokens", help="Demonstration tokens D available."),
    tasks: int = typer.Option(800, "--tasks", help="Number of distinct tasks M."),
    hz: float = typer.Option(30.0, "--hz", help="Control rate F (Hz); budget 1/F per query."),
    horizon: int = typer.Option(300, "--horizon", help="Task horizon T (control steps)."),
    hardware: str | None = typer.Option(None, "--hardware",
                                        help=f"h100-sxm, a100-80gb, {DEFAULT_HARDWARE} "
                                        "(default), cpu-here (measured now)."),
    tflops: float | None = typer.Option(None, "--tflops", help="Peak TFLOP/s (custom chip)."),
    bandwidth: float | None = typer.Option(None, "--bandwidth", help="GB/s (custom chip)."),
    prefix_tokens: int = typer.Option(512, "--prefix-tokens",
                                      help="Observation tokens per query (images, text, state)."),
    action_dims: int = typer.Option(14, "--action-dims",
                                    help="Action dimensions (14: two 7-DoF arms)."),
    deploy_hours: float = typer.Option(1000.0, "--deploy-hours",
                                       help="Hours of deployment (inference demand, step 3)."),
    chunk_eps: float = typer.Option(0.01, "--chunk-eps",
                                    help="Imitation error eps per chunk decision (step 6)."),
    disturbance: float = typer.Option(0.01, "--disturbance",
                                      help="Disturbance probability per step (step 6)."),
    diffusion_steps: int = typer.Option(50, "--diffusion-steps", help="Diffusion steps K."),
    flow_steps: int = typer.Option(10, "--flow-steps", help="Flow-matching steps K."),
    results: str | None = typer.Option(None, "--results",
                                        help="A 'tmath verify --json' file: quote its verdicts "
                                        "and measured numbers."),
    as_json: bool = typer.Option(False, "--json", help="Print machine-readable JSON."),
) -> None:
    """Six design decisions of a VLA (000:1344-1360), each with a number and its basis."""
    number("--tokens", tokens, low=1, high=1e16)
    integer("--tasks", tasks, low=1, high=10**12)
    number("--hz", hz, low=0, low_open=True, high=1e4)
    integer("--horizon", horizon, low=1, high=100_000)
    number("--tflops", tflops, low=0, low_open=True, high=1e6)
    number("--bandwidth", bandwidth, low=0, low_open=True, high=1e7)
    integer("--prefix-tokens", prefix_tokens, low=1, high=1 << 16)
    integer("--action-dims", action_dims, low=1, high=256)
    number("--deploy-hours", deploy_hours, low=0, low_open=True, high=1e7)
    number("--chunk-eps", chunk_eps, low=0, low_open=True, high=1)
    number("--disturbance", disturbance, low=0, low_open=True, high=1)
    integer("--diffusion-steps", diffusion_steps, low=1, high=1000)
    integer("--flow-steps", flow_steps, low=1, high=1000)
    if (tflops is None) != (bandwidth is None):
        fail("give both --tflops and --bandwidth (or neither)")
    if tflops is not None and hardware is not None:
        fail("give --hardware or --tflops/--bandwidth, not both")
    document = None
    if results is not None:
        from transformer_math.report.results import read_results

        path = input_file("--results", results)
        try:  # the one strict reader of results files (size, depth, typed fields; issue 39.3)
            document = read_results(path)
        except (OSError, ValueError) as exc:
            fail(f"--results: {exc}")

    from transformer_math.theory import latency as lm
    from transformer_math.theory import vla_design as vd

    known = sorted([*lm.HARDWARE, "cpu-here"])
    if tflops is not None:
        assert bandwidth is not None
        hw = lm.custom_hardware(tflops, bandwidth)
    else:
        name = hardware or DEFAULT_HARDWARE
        if name not in known:
            fail(f"--hardware must be one of {', '.join(known)}, got {name!r}")
        hw = lm.get_hardware(name)
    inputs = vd.DesignInputs(tokens=tokens, tasks=tasks, hz=hz, horizon=horizon, hardware=hw,
                             prefix_tokens=prefix_tokens, action_dims=action_dims,
                             deploy_hours=deploy_hours, eps=chunk_eps, disturbance=disturbance,
                             diffusion_steps=diffusion_steps, flow_steps=flow_steps)
    try:
        result = vd.design(inputs, document)
    except (ValueError, OverflowError) as exc:
        fail(f"these inputs are out of the range the calculators can represent: {exc}")
    doc = result.to_json()
    if as_json:
        typer.echo(json_text(doc))
        return
    text = json_text(doc)  # refuses a non-finite number before anything is printed
    del text
    out = sys.stdout
    b = result.backbone
    out.write(f"VLA design checklist ({vd.SEED_LINES}): D = {tokens:g} tokens, M = {tasks} "
              f"tasks, F = {hz:g} Hz (1/F = {1e3 / hz:.4g} ms), T = {horizon} steps, on "
              f"{hw.name} ({hw.flops / 1e12:.4g} TFLOP/s, {hw.bandwidth / 1e9:.4g} GB/s"
              f"{'' if hw.verified else ', UNVERIFIED preset'})\n")
    out.write(f"  backbone family (assumption): d = {vd.ASPECT} L, L heads of width "
              f"{vd.ASPECT}, MLP 4 d; {prefix_tokens} observation tokens, {action_dims} action "
              f"dimensions; chosen L = {b.layers}, d = {b.hidden}\n")
    for s in result.steps:
        out.write(f"\n{s.step}. {s.question}\n")
        out.write(f"   answer:  {s.answer}\n")
        out.write(f"   basis:   {', '.join(s.basis)}\n")
        out.write(f"   chapter: {s.chapter_says}\n")
        out.write(f"   differs: {s.differs if s.differs else '-'}\n")
        verdicts = s.values.get("claim_verdicts")
        if verdicts:
            out.write("   verdicts (--results): "
                      + ", ".join(f"{k} {v}" for k, v in verdicts.items()) + "\n")
        if s.step == 5:
            for name, row in s.values["decoders"].items():
                out.write(f"     {name:11s} {row['total_ms']:9.4g} ms  (decoder "
                          f"{row['decoder_ms']:.4g} ms: {row['what']}) "
                          f"{'fits' if row['fits_sync'] else 'over'} 1/F\n")


def register(app: typer.Typer) -> None:
    """Add ``design`` to the ``tmath`` application."""
    app.command("design")(design)
