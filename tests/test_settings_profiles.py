"""Named profiles move defaults only: whatever is given explicitly wins, and a wrong name is refused."""

from __future__ import annotations

import os

import pytest
from pydantic import ValidationError

from mnemonet.node.cli_entry import settings_from_args
from mnemonet.profiles import PROFILES
from mnemonet.settings import Settings


@pytest.fixture(autouse=True)
def _no_mnemonet_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [n for n in os.environ if n.startswith("MNEMONET_")]:
        monkeypatch.delenv(name)


def test_every_profile_names_real_settings_with_valid_values() -> None:
    assert set(PROFILES) == {"lan", "wan", "test"}
    for name, values in PROFILES.items():
        assert set(values) <= set(Settings.model_fields) - {"profile"}, name
        settings = Settings(profile=name)
        assert {k: getattr(settings, k) for k in values} == values


def test_lan_is_the_defaults_and_the_default_profile() -> None:
    assert PROFILES["lan"] == {}
    assert Settings().profile == "lan"
    assert Settings().model_dump() == Settings(profile="lan").model_dump()


def test_wan_stretches_the_timers_and_test_shortens_them() -> None:
    lan, wan, test = Settings(), Settings(profile="wan"), Settings(profile="test")
    for timer in ("probe_interval", "probe_timeout", "suspicion_timeout", "push_pull_interval", "control_timeout",
                  "link_connect_timeout"):
        assert getattr(test, timer) < getattr(lan, timer) < getattr(wan, timer), timer
    assert wan.max_inflight_per_link > lan.max_inflight_per_link
    assert wan.gossip_max_piggyback > lan.gossip_max_piggyback


def test_environment_chooses_the_profile_and_explicit_settings_override_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MNEMONET_PROFILE", "wan")
    assert Settings().probe_interval == PROFILES["wan"]["probe_interval"]
    # A keyword (a flag) names another profile: it wins over the environment's.
    assert Settings(profile="test").probe_interval == PROFILES["test"]["probe_interval"]
    # An explicit setting wins over the profile, from the environment or as a keyword.
    monkeypatch.setenv("MNEMONET_PROBE_TIMEOUT", "0.7")
    assert Settings().probe_timeout == 0.7
    assert Settings(probe_interval=2.0).probe_interval == 2.0
    assert Settings(probe_interval=2.0).suspicion_timeout == PROFILES["wan"]["suspicion_timeout"]


def test_profile_flag_on_the_command_line(monkeypatch: pytest.MonkeyPatch) -> None:
    settings = settings_from_args(["--profile", "wan", "--probe-timeout", "1.5"])
    assert settings.profile == "wan"
    assert settings.probe_interval == PROFILES["wan"]["probe_interval"]
    assert settings.probe_timeout == 1.5
    monkeypatch.setenv("MNEMONET_PROFILE", "test")
    assert settings_from_args(["--profile", "lan"]).probe_interval == Settings.model_fields["probe_interval"].default


@pytest.mark.parametrize("where", ["keyword", "environment"])
def test_an_unknown_profile_is_refused_naming_the_choices(where: str, monkeypatch: pytest.MonkeyPatch) -> None:
    if where == "environment":
        monkeypatch.setenv("MNEMONET_PROFILE", "lab")
    with pytest.raises(ValidationError, match="'lan', 'wan' or 'test'"):
        Settings(profile="lab") if where == "keyword" else Settings()
