"""Servers and platforms whose client libraries carry their name: "Redis 7.2" in memory is
most often the server the project runs, while the build's `redis ^4.6.0` is the client
package (npm's `redis`, PyPI's `redis`, Go's `go-redis/redis/v8`). Compared as one
dependency, every true note about the server's version would read as a stale pin.

So a version claim on such a name stands as a pin only when its line says it is about the
client ("the redis 4.5.0 client", "the `mongodb` driver", "kubernetes Python package");
otherwise it may mean the other thing, and the check is silent, as everywhere in memory
hygiene where a line may mean something else.
"""

from __future__ import annotations

import re


def _names(text: str) -> frozenset[str]:
    return frozenset(text.split())


#: products that run as a server, a cluster or a platform, and whose client packages (in
#: some ecosystem) are published under the same name
SERVICE_NAMES = _names("""
redis valkey memcached mongodb mongo postgres postgresql pg mysql mariadb sqlite cassandra scylla
clickhouse couchdb couchbase neo4j influxdb elasticsearch opensearch solr meilisearch typesense
kafka rabbitmq nats pulsar zookeeper etcd consul vault nomad terraform kubernetes k8s docker podman
nginx traefik envoy minio keycloak temporal prometheus grafana jenkins airflow spark flink
""")

#: the words of a line about the client package rather than the server
_CLIENT = re.compile(r"\b(?:clients?|drivers?|sdks?|packages?|librar(?:y|ies)|libs?|gems?|crates?|modules?|"
                     r"bindings?|dependency|dependencies|deps?|npm|pip|pypi|wrappers?|connectors?|orm)\b",
                     re.IGNORECASE)


def may_mean_the_service(name: str, line: str) -> bool:
    """Whether a version claim on `name` in `line` may be about the server or platform of
    that name, not the client package the build pins."""
    return name.strip("@").lower() in SERVICE_NAMES and not _CLIENT.search(line)
