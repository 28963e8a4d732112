"""Only global unicast addresses receive webhooks, unless the operator allows a network."""

from __future__ import annotations

import ipaddress

import pytest
from django.core.exceptions import ImproperlyConfigured

from webhooks.addresses import allowed_networks, refusal

NON_GLOBAL = [
    "10.1.2.3", "172.16.0.1", "172.31.255.254", "192.168.1.1",  # RFC 1918
    "100.64.0.1", "100.127.255.254",  # carrier-grade NAT
    "0.0.0.0", "0.1.2.3",  # "this network"
    "127.0.0.1", "127.8.9.10", "::1", "::",  # loopback, unspecified
    "169.254.169.254", "fe80::1", "fe80::1:2:3",  # link-local (cloud metadata)
    "224.0.0.1", "239.255.255.250", "ff02::1", "ff0e::1",  # multicast
    "192.0.2.1", "198.51.100.7", "203.0.113.9", "2001:db8::1",  # documentation
    "198.18.0.1", "240.0.0.1", "255.255.255.255", "192.0.0.8",  # benchmarking, reserved, broadcast, IETF
    "fc00::1", "fd12:3456::1", "fec0::1",  # unique local, site-local
    "::ffff:10.0.0.1", "::ffff:127.0.0.1", "::ffff:169.254.169.254",  # IPv4-mapped
    "::a00:1", "64:ff9b::a00:1", "2002:a00:1::1",  # IPv4-compatible, NAT64, 6to4 towards 10.0.0.1
]


@pytest.mark.parametrize("text", NON_GLOBAL)
def test_every_non_global_address_is_refused(text):
    assert refusal(ipaddress.ip_address(text), [])


@pytest.mark.parametrize("text", ["8.8.8.8", "93.184.215.14", "2606:4700:4700::1111", "::ffff:8.8.8.8",
                                  "64:ff9b::808:808"])
def test_global_addresses_are_accepted(text):
    assert refusal(ipaddress.ip_address(text), []) == ""


def test_listed_networks_are_accepted_and_nothing_else(settings):
    settings.WEBHOOKS_ALLOWED_NETWORKS = "127.0.0.0/8, 10.20.0.0/16,::1/128"
    for text in ("127.0.0.1", "::1", "10.20.3.4", "::ffff:127.0.0.1"):
        assert refusal(ipaddress.ip_address(text)) == "", text
    for text in ("10.21.0.1", "192.168.1.1", "169.254.169.254"):
        assert "WEBHOOKS_ALLOWED_NETWORKS" in refusal(ipaddress.ip_address(text)), text


def test_a_list_setting_works_like_the_comma_separated_one(settings):
    settings.WEBHOOKS_ALLOWED_NETWORKS = ["192.168.0.0/16"]
    assert allowed_networks() == [ipaddress.ip_network("192.168.0.0/16")]


def test_a_malformed_network_setting_is_a_clear_configuration_error(settings):
    settings.WEBHOOKS_ALLOWED_NETWORKS = "10.0.0.0/8,not-a-network"
    with pytest.raises(ImproperlyConfigured, match="not-a-network"):
        allowed_networks()
