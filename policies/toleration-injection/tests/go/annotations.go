// The PodTolerationRestriction plugin's reader of a Namespace's toleration annotations, with
// Go's own encoding/json: the differential test of the policy's reader
// (src/pod_toleration_restriction/go_differential.rs) builds this file with `go build` and feeds
// it annotation values, one JSON string literal a line on stdin. For each it prints one line:
// {"read":[[key, operator, value, effect, seconds or null], ...]} or {"refused":"why"}.
//
// What it imitates: extractNSTolerations in Kubernetes'
// plugin/pkg/admission/podtolerationrestriction/admission.go, which returns no tolerations for
// an empty value and otherwise unmarshals it into []v1.Toleration. The struct below has
// v1.Toleration's JSON shape (its operator and effect are string types, read as strings).
// Standard library only: nothing is downloaded.
package main

import (
	"bufio"
	"encoding/json"
	"os"
)

type toleration struct {
	Key               string `json:"key,omitempty"`
	Operator          string `json:"operator,omitempty"`
	Value             string `json:"value,omitempty"`
	Effect            string `json:"effect,omitempty"`
	TolerationSeconds *int64 `json:"tolerationSeconds,omitempty"`
}

type outcome struct {
	Read    *[][]interface{} `json:"read,omitempty"`
	Refused string           `json:"refused,omitempty"`
}

func read(annotation string) outcome {
	if len(annotation) == 0 {
		return outcome{Read: &[][]interface{}{}}
	}
	var tolerations []toleration
	if err := json.Unmarshal([]byte(annotation), &tolerations); err != nil {
		return outcome{Refused: err.Error()}
	}
	read := [][]interface{}{}
	for _, t := range tolerations {
		var seconds interface{}
		if t.TolerationSeconds != nil {
			seconds = *t.TolerationSeconds
		}
		read = append(read, []interface{}{t.Key, t.Operator, t.Value, t.Effect, seconds})
	}
	return outcome{Read: &read}
}

func main() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<26)
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	encoder := json.NewEncoder(out)
	encoder.SetEscapeHTML(false)
	for in.Scan() {
		var annotation string
		if err := json.Unmarshal(in.Bytes(), &annotation); err != nil {
			os.Stderr.WriteString("not a JSON string literal: " + err.Error() + "\n")
			os.Exit(2)
		}
		if err := encoder.Encode(read(annotation)); err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
			os.Exit(2)
		}
	}
	if err := in.Err(); err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
		os.Exit(2)
	}
}
