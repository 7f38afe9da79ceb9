#!/bin/sh
# The default user from the environment (guest may connect from localhost only), logs to
# the console, then the broker in the foreground.
set -eu
{
  echo "default_user = ${RABBITMQ_DEFAULT_USER:-guest}"
  echo "default_pass = ${RABBITMQ_DEFAULT_PASS:-guest}"
  echo "log.console = true"
  echo "log.file = false"
} >/etc/rabbitmq/rabbitmq.conf
exec rabbitmq-server
