package server_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/server"
	"github.com/trellis-go/trellis/store/memory"
)

func TestStoreItemsAreTheirOwnersOnly(t *testing.T) {
	e := newEnv(t, bearerAuth(map[string]string{"tok-ann": "ann", "tok-bob": "bob"}), server.WithStore(memory.New()))
	ann := []string{"Authorization", "Bearer tok-ann"}
	bob := []string{"Authorization", "Bearer tok-bob"}
	assert.Equal(t, http.StatusUnauthorized, e.call(t, "GET", "/store/items?namespace=notes&key=k", nil, nil))
	require.Equal(t, http.StatusNoContent, e.call(t, "PUT", "/store/items", obj{"namespace": []string{"notes"}, "key": "k", "value": obj{"secret": "ann's"}}, nil, ann...))

	var item obj
	require.Equal(t, http.StatusOK, e.call(t, "GET", "/store/items?namespace=notes&key=k", nil, &item, ann...))
	assert.Equal(t, obj{"secret": "ann's"}, item["value"])
	assert.Equal(t, []any{"notes"}, item["namespace"], "the owner's label is not shown")

	item = obj{"sentinel": true}
	require.Equal(t, http.StatusOK, e.call(t, "GET", "/store/items?namespace=notes&key=k", nil, &item, bob...))
	assert.Nil(t, item, "another owner's item reads as missing (null)")
	var found struct{ Items []obj }
	require.Equal(t, http.StatusOK, e.call(t, "POST", "/store/items/search", obj{}, &found, bob...))
	assert.Empty(t, found.Items)
	var ns struct{ Namespaces [][]string }
	require.Equal(t, http.StatusOK, e.call(t, "POST", "/store/namespaces", obj{}, &ns, bob...))
	assert.Empty(t, ns.Namespaces)
	require.Equal(t, http.StatusOK, e.call(t, "POST", "/store/namespaces", obj{}, &ns, ann...))
	assert.Equal(t, [][]string{{"notes"}}, ns.Namespaces)

	// bob's delete of the same namespace and key touches only his own.
	require.Equal(t, http.StatusNoContent, e.call(t, "DELETE", "/store/items", obj{"namespace": []string{"notes"}, "key": "k"}, nil, bob...))
	require.Equal(t, http.StatusOK, e.call(t, "GET", "/store/items?namespace=notes&key=k", nil, &item, ann...))
	assert.Equal(t, obj{"secret": "ann's"}, item["value"])
}

func TestStoreRequestsAreCheckedAndNamed(t *testing.T) {
	e := newEnv(t, server.WithStore(memory.New()))
	cases := []struct {
		method, path string
		body         any
		status       int
		says         string
	}{
		{"PUT", "/store/items", obj{"key": "k", "value": obj{}}, 400, "namespace"},
		{"PUT", "/store/items", obj{"namespace": []string{"a.b"}, "key": "k", "value": obj{}}, 422, "periods"},
		{"PUT", "/store/items", obj{"namespace": []string{"a", ""}, "key": "k", "value": obj{}}, 422, "namespace[1]"},
		{"PUT", "/store/items", obj{"namespace": []string{"a"}, "value": obj{}}, 400, "key"},
		{"PUT", "/store/items", obj{"namespace": []string{"a"}, "key": "k", "value": []int{1}}, 422, "JSON object"},
		{"PUT", "/store/items", obj{"namespace": []string{"a"}, "key": "k", "value": obj{}, "ttl": -1}, 422, "ttl"},
		{"PUT", "/store/items", obj{"namespace": []string{"a"}, "key": "k", "value": obj{}, "index": "title"}, 422, "index"},
		{"GET", "/store/items?namespace=a", nil, 400, "key"},
		{"POST", "/store/items/search", obj{"limit": 5000}, 422, "5000"},
		{"POST", "/store/items/search", obj{"filter": obj{"n": obj{"$near": 1}}}, 422, "$near"},
		{"POST", "/store/items/search", obj{"query": "tea"}, 422, "embedder"},
		{"POST", "/store/namespaces", obj{"max_depth": -1}, 422, "max_depth"},
	}
	for _, c := range cases {
		var detail obj
		status := e.call(t, c.method, c.path, c.body, &detail)
		assert.Equal(t, c.status, status, "%s %s %v", c.method, c.path, c.body)
		assert.Contains(t, detail["detail"], c.says, "%s %s %v", c.method, c.path, c.body)
	}
}
