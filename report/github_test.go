package report

import "testing"

func TestAnnotationString(t *testing.T) {
	cases := []struct {
		a    Annotation
		want string
	}{
		{Annotation{Level: "error", File: "hosts/mastodon.nix", Line: 42, Column: 7, Title: "PR101", Message: "unit x"},
			"::error file=hosts/mastodon.nix,line=42,col=7,title=PR101::unit x"},
		{Annotation{Level: "warning", Title: "PR104", Message: "no place"},
			"::warning title=PR104::no place"},
		{Annotation{Level: "error", File: "a,b:c.nix", Title: "a:b", Message: "50% done::\r\nnext"},
			"::error file=a%2Cb%3Ac.nix,title=a%3Ab::50%25 done::%0D%0Anext"},
	}
	for _, c := range cases {
		if got := c.a.String(); got != c.want {
			t.Errorf("got  %s\nwant %s", got, c.want)
		}
	}
}
