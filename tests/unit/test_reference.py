"""The scenario and fault-kind references in docs/reference are what the models generate now."""

from __future__ import annotations

from benchmarks.docs import reference
from benchmarks.spec import client_profile, fault_kinds, procedures, scenario, workload


def test_the_committed_references_are_not_stale():
    assert reference.stale() == [], "docs/reference is stale: run `make docs` and commit it"


def test_every_field_of_a_scenario_and_every_kind_is_described():
    page = reference.scenario_page()
    for model in (scenario.Scenario, workload.Workload, workload.ConsumerGroup, client_profile.ClientProfile,
                  client_profile.Transactions, procedures.ProcedureSpec):
        for name in model.model_fields:
            assert f"| `{name}` |" in page, f"{model.__name__}.{name}"
    for name in procedures.NAMES:
        assert f"### `playbook: {name}`" in page
    faults = reference.faults_page()
    for kind, spec in fault_kinds.KINDS.items():
        assert f"## `kind: {kind}`" in faults and spec.playbook in faults


def test_types_defaults_and_bounds_are_read_from_the_model():
    page = reference.scenario_page()
    assert "| `partitions` | integer | `3` | ≥ 1; ≤ 1000 |" in page
    assert "| `rate` | number or null | `1000.0` | > 0 | messages/s over all producers; null = unthrottled |" in page
    assert "| `security` | string or null | `null` | `plaintext` · `tls` · `mtls` · `sasl_ssl` |" in page
    assert "| `name` | string | required | matches `^[a-z0-9][a-z0-9._-]*$` |" in page


def test_every_suite_and_each_of_its_files_is_in_the_catalogue_with_the_targets_that_run_it():
    from benchmarks.core import paths

    page = reference.suites_page()
    for suite_dir in (d for d in paths.SUITES.iterdir() if d.is_dir()):
        assert f"## `{suite_dir.name}`" in page
        for path in suite_dir.glob("*.yml"):
            assert f"### `{path.name}`" in page
    assert "Run by `make bench` (on `inventories/local --quick`)" in page
    assert "The same file as `durability/10-negative-acks1-lagging-followers.yml`." in page
    assert "60 runs (a sweep; 12 points skipped); 2 + 20 s of load." in page


def test_the_layers_page_has_every_layer_of_the_contract_and_every_module_of_each():
    from benchmarks.docs import layers

    page = layers.layers_page()
    order = layers.layer_order()
    assert order[0] == "cli" and order[-1] == "core"
    for layer in order:
        assert f"## `benchmarks.{layer}`" in page
        for module in (layers.PACKAGE / layer).rglob("*.py"):
            if module.name != "__init__.py":
                dotted = module.relative_to(layers.PACKAGE).with_suffix("").as_posix().replace("/", ".")
                assert f"| `{dotted}` |" in page
