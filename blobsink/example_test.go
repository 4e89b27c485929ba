package blobsink_test

import (
	"fmt"
	"time"

	"ingest/blobsink"
)

func ExampleBlobName() {
	prefix := blobsink.HourPrefix("queue", time.Date(2014, 7, 31, 18, 42, 0, 0, time.UTC))
	fmt.Println(blobsink.BlobName(prefix, 1, blobsink.CompressNone))
	fmt.Println(blobsink.BlobName(prefix, 2, blobsink.CompressZstd))
	p, seq, _ := blobsink.ParseBlobName("queue/2014/07/31/1800/000002.log.zst")
	fmt.Println(p, seq)
	// Output:
	// queue/2014/07/31/1800/000001.log
	// queue/2014/07/31/1800/000002.log.zst
	// queue/2014/07/31/1800 2
}
