"""``kbx serve``: its options, and the service they build (docs/design/serve.md)."""

from __future__ import annotations

import argparse
import ipaddress

from kbx.commands.terminal import console, fail

LOOPBACK = ("127.0.0.1", "::1", "localhost")


def add_serve(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    about = "serve evaluations over HTTP for RL trainers: batches in, verdicts out"
    s = sub.add_parser("serve", help=about, description=about + " (docs/design/serve.md)")
    s.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    s.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    s.add_argument("--device", choices=("cuda", "cpu"), help="default: cuda when a GPU is visible")
    s.add_argument(
        "--state",
        default="serve-state",
        metavar="DIR",
        help="the queue and cache (SQLite) live here",
    )
    s.add_argument(
        "--tokens",
        metavar="FILE",
        help="bearer tokens, one a line (or sha256:<hex>); needed to listen beyond loopback",
    )
    s.add_argument(
        "--config", metavar="FILE", help="TOML file of tuning knobs (docs/configuration.md)"
    )
    s.add_argument(
        "--jobs",
        type=int,
        metavar="N",
        help="jobs in flight (default: the cores on the CPU, 8 per GPU; Ray: per GPU actor)",
    )
    s.add_argument(
        "--max-code-bytes",
        type=int,
        default=64 * 1024,
        metavar="B",
        help="largest candidate accepted (default 65536; larger: 413)",
    )
    s.add_argument(
        "--max-batch", type=int, default=256, metavar="N", help="items a POST (default 256; 413)"
    )
    s.add_argument(
        "--max-queue",
        type=int,
        default=10_000,
        metavar="N",
        help="jobs waiting at most (default 10000; past it 429 with Retry-After)",
    )
    from kbx.run.backends import add_backend_options

    add_backend_options(s)
    s.set_defaults(fn=cmd_serve)


def loopback(host: str) -> bool:
    if host in LOOPBACK:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def cmd_serve(args: argparse.Namespace) -> int:
    try:
        import uvicorn

        from kbx.serve.build import ServeOptions, build_app
    except ModuleNotFoundError as exc:
        return fail(f"kbx serve needs {exc.name}: pip install 'kernelbench-x[serve]'")
    if args.tokens is None and not loopback(args.host):
        return fail(f"--host {args.host} without --tokens would let anyone evaluate code here")
    try:
        options = ServeOptions.from_args(args)
        app, port = build_app(options)
    except ValueError as exc:  # a bad tokens file, config, device or backend
        return fail(str(exc))
    console.print(f"kbx serve: http://{args.host}:{port} (docs: /docs)", highlight=False)
    uvicorn.run(app, host=args.host, port=port, log_level="warning")
    return 0
