package ec2

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"text/template"
	"time"
)

// fakeEC2 answers the EC2 query protocol (form-encoded POSTs, Action and
// Version parameters, XML answers) for the calls the provider makes, with
// the response bodies in testdata/ (shaped like recorded EC2 responses, so
// the SDK's own deserializers read them) filled from a small in-memory
// model of instances and key pairs.
type fakeEC2 struct {
	t    testing.TB
	tmpl *template.Template
	srv  *httptest.Server

	mu        sync.Mutex
	requests  []url.Values
	auth      []string
	instances []*fakeInstance
	keyPairs  []*fakeKeyPair
	seq       int
	// PendingDescribes is how many describes a new instance stays pending
	// for; NotFoundDescribes how many describes by id do not know it yet
	// (EC2's eventual consistency after a launch).
	pendingDescribes  int
	notFoundDescribes int
	privateIP         string
	publicIP          string
	pageSize          int
	// launchedAgo is how long before the launch call a new instance's
	// LaunchTime lies (an hour unless a test says otherwise).
	launchedAgo time.Duration
	failAction  map[string]fakeError
	// throttleLeft is how many more calls of an action EC2 refuses with
	// RequestLimitExceeded.
	throttleLeft map[string]int
	// describeFixture, when set, names a file of testdata/ that answers
	// every DescribeInstances as it is, instead of the model's instances.
	describeFixture string
}

type fakeError struct{ code, message string }

type fakeTag struct{ Key, Value string }

type fakeInstance struct {
	ID, Token, State, Image, Type, KeyName, Subnet string
	PrivateIP, PublicIP, PrivateDNS, PublicDNS     string
	Groups                                         []string
	Tags                                           []fakeTag
	Launched                                       time.Time
	Reservation                                    string
	pendingLeft, notFoundLeft                      int
}

func (i *fakeInstance) StateCode() int {
	return map[string]int{"pending": 0, "running": 16, "shutting-down": 32, "terminated": 48, "stopping": 64, "stopped": 80}[i.State]
}

func (i *fakeInstance) LaunchTime() string {
	return i.Launched.UTC().Format("2006-01-02T15:04:05.000Z")
}

func (i *fakeInstance) tag(k string) (string, bool) {
	for _, t := range i.Tags {
		if t.Key == k {
			return t.Value, true
		}
	}
	return "", false
}

type fakeKeyPair struct {
	ID, Name, Fingerprint, Material string
	Tags                            []fakeTag
	Created                         time.Time
}

func (k *fakeKeyPair) CreateTime() string { return k.Created.UTC().Format("2006-01-02T15:04:05.000Z") }

func newFakeEC2(t testing.TB) *fakeEC2 {
	t.Helper()
	tmpl, err := template.New("ec2").Funcs(template.FuncMap{"x": xmlEscape}).ParseGlob(filepath.Join("testdata", "*.xml"))
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeEC2{t: t, tmpl: tmpl, privateIP: "10.0.1.17", pageSize: 1000, launchedAgo: time.Hour, failAction: map[string]fakeError{}, throttleLeft: map[string]int{}}
	f.srv = httptest.NewServer(f)
	t.Cleanup(f.srv.Close)
	return f
}

func xmlEscape(s string) string {
	var b bytes.Buffer
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

func (f *fakeEC2) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil || r.Method != http.MethodPost {
		f.fail(w, "MalformedQueryString", "expected a form-encoded POST")
		return
	}
	form := r.PostForm
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests = append(f.requests, form)
	f.auth = append(f.auth, r.Header.Get("Authorization"))
	if form.Get("Version") != "2016-11-15" {
		f.fail(w, "InvalidParameterValue", "unexpected Version "+form.Get("Version"))
		return
	}
	action := form.Get("Action")
	if e, ok := f.failAction[action]; ok {
		f.fail(w, e.code, e.message)
		return
	}
	if f.throttleLeft[action] > 0 {
		f.throttleLeft[action]--
		f.fail(w, "RequestLimitExceeded", "Request limit exceeded.")
		return
	}
	switch action {
	case "RunInstances":
		f.runInstances(w, form)
	case "DescribeInstances":
		if f.describeFixture != "" {
			body, err := os.ReadFile(filepath.Join("testdata", f.describeFixture))
			if err != nil {
				f.t.Errorf("fixture %s: %v", f.describeFixture, err)
			}
			w.Header().Set("Content-Type", "text/xml;charset=UTF-8")
			_, _ = w.Write(body)
			break
		}
		f.describeInstances(w, form)
	case "TerminateInstances":
		f.terminateInstances(w, form)
	case "ImportKeyPair":
		f.importKeyPair(w, form)
	case "DescribeKeyPairs":
		f.describeKeyPairs(w, form)
	case "DeleteKeyPair":
		f.deleteKeyPair(w, form)
	default:
		f.fail(w, "InvalidAction", "The action "+action+" is not valid for this web service.")
	}
}

func (f *fakeEC2) requestID() string {
	f.seq++
	return fmt.Sprintf("7f1c2a3b-4d5e-46f7-8a9b-%012d", f.seq)
}

func (f *fakeEC2) render(w http.ResponseWriter, status int, name string, data map[string]any) {
	data["RequestID"] = f.requestID()
	var b bytes.Buffer
	if err := f.tmpl.ExecuteTemplate(&b, name, data); err != nil {
		f.t.Errorf("render %s: %v", name, err)
		status = http.StatusInternalServerError
	}
	w.Header().Set("Content-Type", "text/xml;charset=UTF-8")
	w.WriteHeader(status)
	_, _ = w.Write(b.Bytes())
}

func (f *fakeEC2) fail(w http.ResponseWriter, code, message string) {
	f.render(w, http.StatusBadRequest, "Error.xml", map[string]any{"Code": code, "Message": message})
}

// list reads a query-protocol list: Prefix.1, Prefix.2, ...
func list(form url.Values, prefix string) []string {
	var out []string
	for i := 1; ; i++ {
		v, ok := form[prefix+"."+strconv.Itoa(i)]
		if !ok {
			return out
		}
		out = append(out, v[0])
	}
}

// tagSpecs reads TagSpecification.N.{ResourceType,Tag.M.Key,Tag.M.Value}.
func tagSpecs(form url.Values) map[string][]fakeTag {
	out := map[string][]fakeTag{}
	for i := 1; ; i++ {
		p := "TagSpecification." + strconv.Itoa(i)
		rt := form.Get(p + ".ResourceType")
		if rt == "" {
			return out
		}
		for j := 1; ; j++ {
			k, ok := form[p+".Tag."+strconv.Itoa(j)+".Key"]
			if !ok {
				break
			}
			out[rt] = append(out[rt], fakeTag{k[0], form.Get(p + ".Tag." + strconv.Itoa(j) + ".Value")})
		}
	}
}

func (f *fakeEC2) runInstances(w http.ResponseWriter, form url.Values) {
	token := form.Get("ClientToken")
	for _, i := range f.instances {
		if token != "" && i.Token == token {
			// Idempotent: the same launch, as it is now.
			f.render(w, 200, "RunInstances.xml", map[string]any{"Reservation": i.Reservation, "Instance": i})
			return
		}
	}
	if form.Get("MinCount") != "1" || form.Get("MaxCount") != "1" || form.Get("ImageId") == "" || form.Get("InstanceType") == "" {
		f.fail(w, "MissingParameter", "MinCount, MaxCount, ImageId and InstanceType are required")
		return
	}
	n := len(f.instances) + 1
	inst := &fakeInstance{
		ID: fmt.Sprintf("i-0%016x", 0xabc000+n), Token: token, State: "pending",
		Image: form.Get("ImageId"), Type: form.Get("InstanceType"), KeyName: form.Get("KeyName"),
		Subnet: form.Get("SubnetId"), Groups: list(form, "SecurityGroupId"),
		PrivateIP: f.privateIP, PrivateDNS: fmt.Sprintf("ip-10-0-1-%d.eu-west-1.compute.internal", n),
		Tags: tagSpecs(form)["instance"], Launched: time.Now().Add(-f.launchedAgo),
		Reservation: fmt.Sprintf("r-0%016x", 0xdef000+n), pendingLeft: f.pendingDescribes, notFoundLeft: f.notFoundDescribes,
	}
	if form.Get("NetworkInterface.1.AssociatePublicIpAddress") == "true" {
		inst.PublicIP, inst.PublicDNS = f.publicIP, "ec2-198-51-100-7.eu-west-1.compute.amazonaws.com"
		inst.Subnet, inst.Groups = form.Get("NetworkInterface.1.SubnetId"), list(form, "NetworkInterface.1.SecurityGroupId")
	}
	f.instances = append(f.instances, inst)
	f.render(w, 200, "RunInstances.xml", map[string]any{"Reservation": inst.Reservation, "Instance": inst})
}

func (f *fakeEC2) describeInstances(w http.ResponseWriter, form url.Values) {
	ids := list(form, "InstanceId")
	filters := map[string][]string{}
	for i := 1; ; i++ {
		name := form.Get("Filter." + strconv.Itoa(i) + ".Name")
		if name == "" {
			break
		}
		filters[name] = list(form, "Filter."+strconv.Itoa(i)+".Value")
	}
	var match []*fakeInstance
	for _, inst := range f.instances {
		if len(ids) > 0 {
			if !slices.Contains(ids, inst.ID) {
				continue
			}
			if inst.notFoundLeft > 0 {
				inst.notFoundLeft--
				f.fail(w, "InvalidInstanceID.NotFound", "The instance ID '"+inst.ID+"' does not exist")
				return
			}
		}
		if !matches(inst, filters) {
			continue
		}
		if len(ids) == 0 && inst.notFoundLeft > 0 {
			// Listings lag behind a launch too.
			inst.notFoundLeft--
			continue
		}
		match = append(match, inst)
	}
	if len(ids) > 0 && len(match) < len(ids) {
		f.fail(w, "InvalidInstanceID.NotFound", "The instance IDs '"+strings.Join(ids, ", ")+"' do not exist")
		return
	}
	// Describing moves time on: pending instances start, terminating
	// ones end.
	for _, inst := range match {
		switch inst.State {
		case "pending":
			if inst.pendingLeft > 0 {
				inst.pendingLeft--
			} else {
				inst.State = "running"
			}
		case "shutting-down":
			inst.State = "terminated"
		}
	}
	start := 0
	if tok := form.Get("NextToken"); tok != "" {
		start, _ = strconv.Atoi(tok)
	}
	end := min(start+f.pageSize, len(match))
	next := ""
	if end < len(match) {
		next = strconv.Itoa(end)
	}
	f.render(w, 200, "DescribeInstances.xml", map[string]any{"Instances": match[start:end], "NextToken": next})
}

func matches(inst *fakeInstance, filters map[string][]string) bool {
	for name, values := range filters {
		switch {
		case name == "instance-state-name":
			if !slices.Contains(values, inst.State) {
				return false
			}
		case name == "tag-key":
			found := false
			for _, v := range values {
				if _, ok := inst.tag(v); ok {
					found = true
				}
			}
			if !found {
				return false
			}
		case strings.HasPrefix(name, "tag:"):
			v, ok := inst.tag(strings.TrimPrefix(name, "tag:"))
			if !ok || !slices.Contains(values, v) {
				return false
			}
		default:
			return false
		}
	}
	return true
}

func (f *fakeEC2) terminateInstances(w http.ResponseWriter, form url.Values) {
	ids := list(form, "InstanceId")
	type change struct {
		ID, Current, Previous     string
		CurrentCode, PreviousCode int
	}
	var changes []change
	for _, id := range ids {
		var inst *fakeInstance
		for _, i := range f.instances {
			if i.ID == id {
				inst = i
			}
		}
		if inst == nil {
			f.fail(w, "InvalidInstanceID.NotFound", "The instance ID '"+id+"' does not exist")
			return
		}
		prev, prevCode := inst.State, inst.StateCode()
		if inst.State != "terminated" {
			inst.State = "shutting-down"
		}
		changes = append(changes, change{ID: id, Previous: prev, PreviousCode: prevCode, Current: inst.State, CurrentCode: inst.StateCode()})
	}
	f.render(w, 200, "TerminateInstances.xml", map[string]any{"Changes": changes})
}

func (f *fakeEC2) importKeyPair(w http.ResponseWriter, form url.Values) {
	name := form.Get("KeyName")
	for _, k := range f.keyPairs {
		if k.Name == name {
			f.fail(w, "InvalidKeyPair.Duplicate", "The keypair already exists")
			return
		}
	}
	k := &fakeKeyPair{ID: fmt.Sprintf("key-0%016x", len(f.keyPairs)+1), Name: name, Material: form.Get("PublicKeyMaterial"),
		Fingerprint: "4a:8b:5f:1c:9d:2e", Tags: tagSpecs(form)["key-pair"], Created: time.Now().Add(-time.Hour)}
	f.keyPairs = append(f.keyPairs, k)
	f.render(w, 200, "ImportKeyPair.xml", map[string]any{"Name": k.Name, "ID": k.ID, "Fingerprint": k.Fingerprint, "Tags": k.Tags})
}

func (f *fakeEC2) describeKeyPairs(w http.ResponseWriter, form url.Values) {
	var match []*fakeKeyPair
	for _, k := range f.keyPairs {
		ok := true
		for i := 1; ; i++ {
			name := form.Get("Filter." + strconv.Itoa(i) + ".Name")
			if name == "" {
				break
			}
			if name == "tag-key" {
				has := false
				for _, v := range list(form, "Filter."+strconv.Itoa(i)+".Value") {
					for _, t := range k.Tags {
						has = has || t.Key == v
					}
				}
				ok = ok && has
			}
		}
		if ok {
			match = append(match, k)
		}
	}
	f.render(w, 200, "DescribeKeyPairs.xml", map[string]any{"KeyPairs": match})
}

func (f *fakeEC2) deleteKeyPair(w http.ResponseWriter, form url.Values) {
	name := form.Get("KeyName")
	for i, k := range f.keyPairs {
		if k.Name == name {
			f.keyPairs = slices.Delete(f.keyPairs, i, i+1)
			f.render(w, 200, "DeleteKeyPair.xml", map[string]any{"ID": k.ID})
			return
		}
	}
	f.render(w, 200, "DeleteKeyPair.xml", map[string]any{"ID": ""})
}

// calls returns the recorded requests of one action.
func (f *fakeEC2) calls(action string) []url.Values {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []url.Values
	for _, r := range f.requests {
		if r.Get("Action") == action {
			out = append(out, r)
		}
	}
	return out
}

func (f *fakeEC2) instance(id string) fakeInstance {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, i := range f.instances {
		if i.ID == id {
			return *i
		}
	}
	return fakeInstance{}
}

func (f *fakeEC2) states() map[string]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]string{}
	for _, i := range f.instances {
		out[i.ID] = i.State
	}
	return out
}

func (f *fakeEC2) keyNames() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, k := range f.keyPairs {
		out = append(out, k.Name)
	}
	sort.Strings(out)
	return out
}

// seed adds an instance directly (one heddle made earlier, or another
// program's).
func (f *fakeEC2) seed(state string, launched time.Time, tags ...string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := len(f.instances) + 1
	inst := &fakeInstance{ID: fmt.Sprintf("i-0%016x", 0x5eed00+n), State: state, Image: "ami-0abc", Type: "t3.micro",
		Launched: launched, Reservation: fmt.Sprintf("r-0%016x", 0x5eed00+n), PrivateIP: "10.0.9.9"}
	for i := 0; i+1 < len(tags); i += 2 {
		inst.Tags = append(inst.Tags, fakeTag{tags[i], tags[i+1]})
	}
	f.instances = append(f.instances, inst)
	return inst.ID
}

func (f *fakeEC2) seedKeyPair(name string, tags ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	k := &fakeKeyPair{ID: fmt.Sprintf("key-0%016x", 0x5eed+len(f.keyPairs)), Name: name, Created: time.Now().Add(-24 * time.Hour)}
	for i := 0; i+1 < len(tags); i += 2 {
		k.Tags = append(k.Tags, fakeTag{tags[i], tags[i+1]})
	}
	f.keyPairs = append(f.keyPairs, k)
}

var instanceIDPattern = regexp.MustCompile(`^i-0[0-9a-f]{16}$`)
