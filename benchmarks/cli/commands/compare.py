"""`kafka-bench compare DIR DIR [...] --out DIR`: the same scenarios of several result directories side by side."""

from __future__ import annotations

from pathlib import Path

import click
from rich.table import Table

from benchmarks.cli.console import console, stdout
from benchmarks.core import paths
from benchmarks.core.exit_codes import ExitCode
from benchmarks.report import compare as compare_lib


@click.command()
@click.argument("directories", nargs=-1, type=click.Path(file_okay=False, path_type=Path))
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="Directory for compare.html and compare.csv.")
@click.option("--newest", metavar="SUITE", default=None,
              help="Instead of DIRECTORIES: the newest results of SUITE (e.g. seeds) on each metadata mode.")
def compare(directories: tuple[Path, ...], out: Path, newest: str | None) -> None:
    """Put the same scenarios of two or more result directories (each with the summary.csv of
    `kafka-bench report`) side by side: ZooKeeper vs KRaft, two versions, ELR on vs off. Writes
    compare.html and compare.csv and names the differences that matter."""
    if newest:
        if directories:
            raise click.UsageError("give DIRECTORIES or --newest, not both")
        found = compare_lib.newest_by_mode(paths.PROJECT_ROOT / "benchmarks" / "results", newest)
        if len(found) < 2:
            console.print(f"nothing to compare yet: the newest {newest} results are on "
                          f"{', '.join(f'{m} ({d.name})' for m, d in found.items()) or 'no mode'}; "
                          "run the suite on the other metadata mode too")
            return
        directories = tuple(found[m] for m in sorted(found, reverse=True))  # zookeeper before kraft
    try:
        comparison, html, csv_path = compare_lib.write(list(directories), out)
    except compare_lib.CompareError as exc:
        console.print(f"[red]error:[/] {exc}")
        raise click.exceptions.Exit(ExitCode.INVALID_INPUT) from exc
    table = Table(title=f"Comparison: {' vs '.join(comparison.labels)}", title_justify="left")
    table.add_column("scenario")
    table.add_column("differences that matter", overflow="fold")
    for row in comparison.rows:
        table.add_row(row["scenario"], row["differences"] or "none beyond noise")
    stdout.print(table)
    for label, names in comparison.unmatched.items():
        console.print(f"[yellow]only in {label}:[/] {', '.join(names)}")
    stdout.print(f"comparison: {html}")
    stdout.print(f"figures: {csv_path}")
