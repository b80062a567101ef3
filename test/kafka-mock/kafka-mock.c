/*
 * librdkafka's mock Kafka cluster as a process, for tests (test/kafka-mock.ts compiles and starts
 * it): speaks Kafka's wire protocol on 127.0.0.1 (ephemeral ports). Not Kafka: librdkafka's mock
 * covers produce, fetch, metadata, consumer groups and offsets, and does not implement
 * transactions faithfully.
 *
 * Usage: kafka-mock <brokers> [topic:partitions ...]
 * Prints "bootstrap <host:port,...>" on stdout once ready; runs until stdin is closed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

int main(int argc, char **argv) {
  char err[512];
  int brokers = argc > 1 ? atoi(argv[1]) : 1;
  if (brokers < 1 || brokers > 9) {
    fprintf(stderr, "kafka-mock: brokers must be 1..9\n");
    return 2;
  }
  rd_kafka_conf_t *conf = rd_kafka_conf_new();
  /* The handle only hosts the mock cluster; it never connects anywhere. */
  if (rd_kafka_conf_set(conf, "bootstrap.servers", "", err, sizeof(err)) != RD_KAFKA_CONF_OK) {
    fprintf(stderr, "kafka-mock: %s\n", err);
    return 1;
  }
  rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err));
  if (rk == NULL) {
    fprintf(stderr, "kafka-mock: %s\n", err);
    return 1;
  }
  rd_kafka_mock_cluster_t *mc = rd_kafka_mock_cluster_new(rk, brokers);
  if (mc == NULL) {
    fprintf(stderr, "kafka-mock: could not start the mock cluster\n");
    return 1;
  }
  for (int i = 2; i < argc; i++) {
    char *colon = strrchr(argv[i], ':');
    if (colon == NULL) {
      fprintf(stderr, "kafka-mock: a topic is name:partitions, got %s\n", argv[i]);
      return 2;
    }
    *colon = '\0';
    rd_kafka_resp_err_t e = rd_kafka_mock_topic_create(mc, argv[i], atoi(colon + 1), 1);
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
      fprintf(stderr, "kafka-mock: topic %s: %s\n", argv[i], rd_kafka_err2str(e));
      return 1;
    }
  }
  printf("bootstrap %s\n", rd_kafka_mock_cluster_bootstraps(mc));
  fflush(stdout);
  /* Until stdin closes (the test ends, or its process dies). */
  char buf[256];
  while (fgets(buf, sizeof(buf), stdin) != NULL) {
  }
  rd_kafka_mock_cluster_destroy(mc);
  rd_kafka_destroy(rk);
  return 0;
}
