"""Where environment actors may run on a Ray cluster: each node declares one custom resource per
environment whose applications it has (`ray start --resources "$(medspot live doctor
--ray-resources)"`), and every environment actor requests one unit of its environment's. No
Ray import here: the doctor runs on nodes before Ray is involved.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["ENV_RESOURCE_UNITS", "RESOURCE_PREFIX", "node_resources", "resource_name"]

RESOURCE_PREFIX = "medspot-env-"
# Units a node declares per environment: a label with room for this many actors; the CPUs a
# node has (and `--ray-cpus-per-env`) bound how many really run there.
ENV_RESOURCE_UNITS = 100


def resource_name(env: str) -> str:
    """The custom resource of environment `env`: `medspot-env-orthanc-explorer`."""
    return RESOURCE_PREFIX + env


def node_resources(envs: Iterable[str]) -> dict[str, int]:
    """The `ray start --resources` mapping of a node that has the applications of `envs`."""
    return {resource_name(e): ENV_RESOURCE_UNITS for e in envs}
