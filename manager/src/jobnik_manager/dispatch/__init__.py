"""Push dispatch over RabbitMQ: outbox rows written with each change, and the relay
that publishes them to the `jobnik` topic exchange."""
