"""`kafka-bench lab up | down | status | ssh`: namespace hosts on this machine."""

from __future__ import annotations

import os
from pathlib import Path

import click

from benchmarks.cli.console import console
from benchmarks.core.exit_codes import ExitCode
from benchmarks.hosts import inventory as inventory_lib
from benchmarks.hosts import lab as lab_lib
from benchmarks.hosts import lab_spec

lab_inventory_option = click.option(
    "--inventory", "-i", "inventory_path", type=click.Path(path_type=Path), default=lab_spec.DEFAULT_INVENTORY,
    show_default=True, help="Lab inventory: one namespace host per inventory host, at its ansible_host.")


def load_lab_or_exit(inventory_path: Path) -> lab_lib.Lab:
    try:
        return lab_lib.Lab(lab_spec.load_spec(inventory_path))
    except (lab_spec.LabError, inventory_lib.InventoryError) as exc:
        console.print(f"[red]error:[/] {exc}")
        raise click.exceptions.Exit(ExitCode.INVALID_INPUT) from exc


def _print_states(states: list[lab_lib.HostState]) -> None:
    for state in states:
        mark = "[green]up[/]" if state.up else "[red]down[/]"
        console.print(f"  {state.host.name:<8} {state.host.address:<15} {mark}  namespace {state.host.netns}"
                      f"{'' if state.netns else ' (missing)'}, init {state.pid or '-'}, "
                      f"sshd {'answers' if state.ssh else 'silent'}")


@click.group()
def lab() -> None:
    """Hosts on this machine (network namespaces with their own /etc, /opt, /var and an sshd),
    so the multi-host playbooks run over SSH exactly as on real hosts."""


@lab.command()
@lab_inventory_option
def up(inventory_path: Path) -> None:
    """Build the lab's bridge and hosts (what is missing; a second `up` changes nothing).
    Then: ansible-playbook -i inventories/lab playbooks/site.yml."""
    the_lab = load_lab_or_exit(inventory_path)
    spec = the_lab.spec
    console.print(f"lab bridge {spec.bridge}: clients {spec.gateway}, management {spec.management}")
    try:
        states = the_lab.up(on_host=lambda host, what: console.print(f"  {host.name} ({host.address}): {what}"))
    except lab_spec.LabError as exc:
        console.print(f"[red]error:[/] {exc}")
        raise click.exceptions.Exit(ExitCode.FAILURE) from exc
    _print_states(states)
    console.print(f"ssh -F {spec.state_dir / 'ssh_config'} {spec.hosts[0].name}   # log in to a host")
    console.print(f"kafka-bench cluster up --inventory {inventory_path}   # deploy ZooKeeper and Kafka on them")


@lab.command()
@lab_inventory_option
@click.option("--keep-state", is_flag=True, help="Keep the hosts' files (their /etc, /opt, /var layers).")
def down(inventory_path: Path, keep_state: bool) -> None:
    """Kill everything in the lab, delete its namespaces, links and bridge, and check that
    nothing is left. Works on a half-built lab; twice is harmless."""
    the_lab = load_lab_or_exit(inventory_path)
    left = the_lab.down(purge=not keep_state)
    if left:
        console.print("[red]error:[/] left behind: " + "; ".join(left))
        raise click.exceptions.Exit(ExitCode.FAILURE)
    console.print("lab down: no namespace, link, mount or process left")


@lab.command()
@lab_inventory_option
def status(inventory_path: Path) -> None:
    """Each host: namespace, init process, sshd."""
    the_lab = load_lab_or_exit(inventory_path)
    states = the_lab.status()
    _print_states(states)
    if not all(s.up for s in states):
        raise click.exceptions.Exit(ExitCode.UNHEALTHY)


@lab.command(context_settings={"ignore_unknown_options": True})
@lab_inventory_option
@click.argument("host")
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
def ssh(inventory_path: Path, host: str, command: tuple[str, ...]) -> None:
    """Log in to a lab host over SSH (or run COMMAND there)."""
    the_lab = load_lab_or_exit(inventory_path)
    try:
        the_lab.spec.host(host)
    except lab_spec.LabError as exc:
        console.print(f"[red]error:[/] {exc}")
        raise click.exceptions.Exit(ExitCode.INVALID_INPUT) from exc
    config = the_lab.spec.state_dir / "ssh_config"
    if not config.exists():
        console.print("[red]error:[/] the lab is not up; run `kafka-bench lab up`")
        raise click.exceptions.Exit(ExitCode.UNREACHABLE)
    os.execvp("ssh", ["ssh", "-F", str(config), host, *command])
