package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"ingest/shard"
)

// TableName is the table that holds every instance's entry.
const TableName = "cluster"

// Table is the cluster table on the Azure Table service (or Azurite), one
// partition per group of instances.
type Table struct {
	client *aztables.Client
	group  string // the PartitionKey: the blob container's name
}

// NewTable returns the cluster table of group (the blob container) on svc.
func NewTable(svc *aztables.ServiceClient, group string) *Table {
	return &Table{client: svc.NewClient(TableName), group: string(shard.EscapeKey(nil, []byte(group)))}
}

// entry is one instance's entity as stored, with what the service adds.
type entry struct {
	Member
	run   string
	stamp time.Time // the service's time of the last write (Timestamp)
	etag  azcore.ETag
}

// entity is an entry's JSON form.
type entity struct {
	PartitionKey, RowKey string
	ID, URL, Version     string
	StartedType          string    `json:"Started@odata.type,omitempty"`
	Started              time.Time `json:"Started"`
	Run, TailKey         string
	Timestamp            time.Time `json:",omitzero"`
	ETag                 string    `json:"odata.etag,omitempty"`
}

// put writes (creates or replaces) e and returns its new ETag, creating the
// table the first time it is missing.
func (t *Table) put(ctx context.Context, e *entry) (azcore.ETag, error) {
	b, err := json.Marshal(entity{PartitionKey: t.group, RowKey: t.rowKey(e.ID), ID: e.ID, URL: e.URL, Version: e.Version,
		StartedType: "Edm.DateTime", Started: e.Started.UTC(), Run: e.run, TailKey: e.TailKey})
	if err != nil {
		return "", err
	}
	for created := false; ; created = true {
		resp, err := t.client.UpsertEntity(ctx, b, &aztables.UpsertEntityOptions{UpdateMode: aztables.UpdateModeReplace})
		if err == nil {
			return resp.ETag, nil
		}
		if created || !hasCode(err, aztables.TableNotFound) {
			return "", fmt.Errorf("cannot write this instance's entry in table %s: %w", TableName, err)
		}
		if _, err := t.client.CreateTable(ctx, nil); err != nil && !hasCode(err, aztables.TableAlreadyExists) {
			return "", fmt.Errorf("cannot create table %s: %w", TableName, err)
		}
	}
}

// list reads every entry of the group: one range query (a page per 1,000).
func (t *Table) list(ctx context.Context) ([]entry, error) {
	f := "PartitionKey eq '" + strings.ReplaceAll(t.group, "'", "''") + "'"
	pager := t.client.NewListEntitiesPager(&aztables.ListEntitiesOptions{Filter: &f})
	var out []entry
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if hasCode(err, aztables.TableNotFound) {
			return out, nil
		}
		if err != nil {
			return out, fmt.Errorf("cannot list the instances in table %s: %w", TableName, err)
		}
		for _, raw := range page.Entities {
			var v entity
			if err := json.Unmarshal(raw, &v); err != nil {
				return out, fmt.Errorf("cannot read an entry of table %s: %w", TableName, err)
			}
			out = append(out, entry{Member: Member{ID: v.ID, URL: v.URL, Version: v.Version, Started: v.Started, TailKey: v.TailKey},
				run: v.Run, stamp: v.Timestamp, etag: azcore.ETag(v.ETag)})
		}
	}
	return out, nil
}

// remove deletes id's entry if it is still the version etag names; one
// that is gone already or was rewritten since is left alone.
func (t *Table) remove(ctx context.Context, id string, etag azcore.ETag) error {
	_, err := t.client.DeleteEntity(ctx, t.group, t.rowKey(id), &aztables.DeleteEntityOptions{IfMatch: &etag})
	var re *azcore.ResponseError
	if errors.As(err, &re) && (re.StatusCode == http.StatusNotFound || re.StatusCode == http.StatusPreconditionFailed) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("cannot delete the entry of %s from table %s: %w", id, TableName, err)
	}
	return nil
}

func (t *Table) rowKey(id string) string { return string(shard.EscapeKey(nil, []byte(id))) }

func hasCode(err error, code aztables.TableErrorCode) bool {
	var re *azcore.ResponseError
	return errors.As(err, &re) && re.ErrorCode == string(code)
}
