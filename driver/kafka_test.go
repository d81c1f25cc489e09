package driver_test

import (
	"testing"

	"github.com/cloudprofiler-go/cp/driver"
	"github.com/cloudprofiler-go/cp/internal/testkit/realserver"
)

// fakeKafka is franz-go's in-process cluster (a conformance check of the
// driver, never a figure).
func fakeKafka(t *testing.T) string { return realserver.FakeKafka(t) }

func TestKafkaRoundTrip(t *testing.T) {
	addr := fakeKafka(t)
	roundTrip(t, []string{"kafka://" + addr + "/cp.all", "kafka://" + addr + "/cp.leader?acks=leader&linger=1ms&window=100"})
}

func TestKafkaOptions(t *testing.T) {
	e, err := driver.Parse("kafka://h:9092/cp?acks=all&idempotent=false&linger=5ms")
	if err != nil || e.Acks != "all" || e.Idempotent || e.Linger.Milliseconds() != 5 || e.Server != "h:9092" {
		t.Errorf("%+v %v", e, err)
	}
	for _, bad := range []string{"kafka://h:9092/cp?acks=2", "kafka://h:9092/cp?linger=5s", "kafka://h:9092/cp?storage=memory", "kafka://h:9092/cp?maxlen=5"} {
		if _, err := driver.Parse(bad); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}
