"""Write simulated event files for the benchmarks (default: 1M and 10M rows of CSV).

    python benchmarks/gen_events.py                      # benchmarks/data/events_1M.csv, _10M.csv
    python benchmarks/gen_events.py --sizes 250k --format parquet --force

Row counts are approximate (the simulator is sized by users: within about 1%); the
exact count, the seed and the timings go to a ``.json`` file beside each data file.
Files that already exist with the same parameters (and simulator source) are kept
unless ``--force``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA_DIR = HERE / "data"
DEFAULT_SIZES = "1M,10M"
_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kKmM]?)\s*$")


def parse_size(text: str) -> int:
    """``"1M"`` → 1_000_000, ``"250k"`` → 250_000, ``"5000"`` → 5000."""
    match = _SIZE_RE.match(text)
    if not match:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (e.g. 1M, 250k, 5000)")
    number, unit = float(match.group(1)), match.group(2).lower()
    return int(number * {"": 1, "k": 1_000, "m": 1_000_000}[unit])


def parse_sizes(text: str) -> list[int]:
    """``"1M,10M"`` → [1_000_000, 10_000_000]: an argparse ``type`` (a bad size is
    argparse's one-line error naming the option)."""
    return [parse_size(s) for s in text.split(",") if s.strip()]


def size_label(rows: int) -> str:
    """1_000_000 → ``"1M"``; 250_000 → ``"250k"``."""
    if rows % 1_000_000 == 0:
        return f"{rows // 1_000_000}M"
    if rows % 1_000 == 0:
        return f"{rows // 1_000}k"
    return str(rows)


def data_path(rows: int, fmt: str = "csv", data_dir: Path = DATA_DIR) -> Path:
    return data_dir / f"events_{size_label(rows)}.{fmt}"


@dataclass(frozen=True)
class Generated:
    path: Path
    target_rows: int
    rows: int
    users: int
    seed: int
    seconds: float
    bytes: int
    reused: bool

    @property
    def rows_per_second(self) -> float:
        return self.rows / self.seconds if self.seconds else float("nan")


def generate(
    rows: int, fmt: str = "csv", data_dir: Path = DATA_DIR, seed: int = 0, force: bool = False
) -> Generated:
    """Write about ``rows`` simulated events to ``data_dir`` (kept if already there)."""
    try:
        import abeval.simulate as simulate_module
    except ImportError:  # run from a checkout without an installed package
        sys.path.insert(0, str(HERE.parent))
        import abeval.simulate as simulate_module
    from abeval.simulate import SimulationConfig, users_for_rows, write_events

    path = data_path(rows, fmt, data_dir)
    meta_path = path.with_name(path.name + ".json")
    base = SimulationConfig(seed=seed)
    users = users_for_rows(rows, base)
    # The simulator's version: a hash of its package's sources.
    sources = sorted(Path(simulate_module.__file__ or "").parent.glob("*.py"))
    simulator = hashlib.sha256(b"".join(p.read_bytes() for p in sources)).hexdigest()[:12]
    if path.exists() and meta_path.exists() and not force:
        meta = json.loads(meta_path.read_text())
        same = (meta.get("users"), meta.get("seed"), meta.get("simulator"))
        if same == (users, seed, simulator):
            return Generated(
                path, rows, meta["rows"], users, seed, meta["seconds"], path.stat().st_size, True
            )
    config = SimulationConfig(users=users, seed=seed)
    data_dir.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    t0 = time.perf_counter()
    written = write_events(config, partial, format=fmt)  # type: ignore[arg-type]
    seconds = time.perf_counter() - t0
    partial.replace(path)
    meta = {
        "rows": written,
        "target_rows": rows,
        "users": users,
        "seed": seed,
        "format": fmt,
        "seconds": round(seconds, 3),
        "experiment": config.experiment,
        "arms": list(config.arms),
        "simulator": simulator,  # files from another version of the simulator are remade
    }
    meta_path.write_text(json.dumps(meta, indent=2) + "\n")
    return Generated(path, rows, written, users, seed, seconds, path.stat().st_size, False)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--sizes", default=DEFAULT_SIZES, type=parse_sizes, help="comma-separated row counts"
    )
    parser.add_argument(
        "--format", default="csv", choices=["csv", "csv.gz", "parquet", "jsonl"], dest="fmt"
    )
    parser.add_argument("--data-dir", type=Path, default=DATA_DIR)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--force", action="store_true", help="regenerate existing files")
    args = parser.parse_args(argv)
    for rows in args.sizes:
        g = generate(rows, args.fmt, args.data_dir, args.seed, args.force)
        state = "kept" if g.reused else "wrote"
        print(
            f"{state} {g.path.name}: {g.rows:,} rows, {g.users:,} users, "
            f"{g.bytes / 2**20:,.0f} MiB in {g.seconds:.1f} s ({g.rows_per_second:,.0f} rows/s)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
