"""Type-checking costs: the prelude, a 100,000-binding graph, and a convolutional network.

    .venv/bin/python benchmarks/typecheck.py

Prints the median of a few runs of ``relay.infer_type`` on each program. The programs are
built once; inference overwrites the recorded types, so repeated runs measure the same work.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

import relay

N = 100_000


def median_ms(fn: Callable[[], object], runs: int = 3) -> float:
    """Median wall time of ``fn`` in milliseconds."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def conv_net(blocks: int) -> str:
    """A ResNet-style stack: ``blocks`` conv-bn-relu blocks on a (n, 64, 56, 56) input."""
    params = ["%x: Tensor[(n, 64, 56, 56), float32]"]
    body = ["  let %h0 = %x;"]
    for i in range(blocks):
        params += [
            f"%w{i}: Tensor[(64, 64, 3, 3), float32]",
            f"%g{i}: Tensor[(64,), float32]",
            f"%b{i}: Tensor[(64,), float32]",
            f"%m{i}: Tensor[(64,), float32]",
            f"%v{i}: Tensor[(64,), float32]",
        ]
        body += [
            f"  let %c{i} = nn.conv2d(%h{i}, %w{i}, padding=[1, 1], channels=64, "
            "kernel_size=[3, 3]);",
            f"  let %n{i} = nn.batch_norm(%c{i}, %g{i}, %b{i}, %m{i}, %v{i});",
            f"  let %h{i + 1} = nn.relu(add(%n{i}.0, %h{i}));",
        ]
    body.append(f"  %h{blocks}")
    return "def @main(" + ", ".join(params) + ") {\n" + "\n".join(body) + "\n}\n"


def main() -> None:
    """Run and print the measurements."""
    mod = relay.prelude()
    print(
        f"prelude ({len(mod.functions)} functions): {median_ms(lambda: relay.infer_type(mod)):.0f} ms"
    )

    graph = "fn (%x: Tensor[(3, 4), float32]) {\n" + "".join(
        f"  %{i} = add({'%x' if i == 0 else f'%{i - 1}'}, 1f);\n" for i in range(N - 1)
    )
    graph += f"  %{N - 2}\n}}"
    parsed = relay.parse_expr(graph)
    print(f"{N}-binding graph: {median_ms(lambda: relay.infer_type(parsed)):.0f} ms")

    net = relay.parse(conv_net(50))
    print(f"50 conv-bn-relu blocks: {median_ms(lambda: relay.infer_type(net)):.0f} ms")
    print(f"  result: {net.get_global_var('main').checked_type.ret_type}")


if __name__ == "__main__":
    main()
