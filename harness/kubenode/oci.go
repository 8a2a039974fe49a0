package kubenode

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path"
	"runtime"
	"time"

	digest "github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// The node needs images that no registry serves: the pause image of its
// pods' sandboxes, and a node's stand-in image with that node's units. Both
// are written here as OCI archives, which containerd imports as they are;
// nothing is built through a container engine and no engine's store is
// touched.

// Image is an image that kubenode writes itself: one layer of files on
// top of a base image, or on nothing (FROM scratch).
type Image struct {
	// Ref is the name containerd keeps it under.
	Ref string
	// Base is an OCI archive of the image this one builds on (what
	// `podman save --format oci-archive` writes); "" for none.
	Base string
	// Config sets the image's command and defaults; its zero fields keep
	// the base's.
	Config ocispec.ImageConfig
	// Files are the layer's files.
	Files []File
}

// File is a file, folder or symbolic link of a layer.
type File struct {
	Name    string
	Mode    int64
	Data    []byte
	Symlink string // the link's target, for a symbolic link
	Dir     bool
}

// layer writes files as an uncompressed tar, owned by root, with a fixed
// time: the same files give the same digest.
func layer(files []File) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	epoch := time.Unix(0, 0)
	for _, f := range files {
		h := &tar.Header{Name: f.Name, Mode: f.Mode, ModTime: epoch, Format: tar.FormatPAX}
		switch {
		case f.Dir:
			h.Typeflag = tar.TypeDir
			h.Name += "/"
		case f.Symlink != "":
			h.Typeflag, h.Linkname = tar.TypeSymlink, f.Symlink
		default:
			h.Typeflag, h.Size = tar.TypeReg, int64(len(f.Data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write(f.Data); err != nil {
				return nil, err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// baseArchive is what is read of a base image's archive: its manifest and
// config, and the names of its blobs.
type baseArchive struct {
	manifest ocispec.Manifest
	config   ocispec.Image
}

// readBase reads the manifest and config of the one image of an OCI
// archive.
func readBase(file string) (*baseArchive, error) {
	small := map[string][]byte{}
	err := eachTarEntry(file, func(h *tar.Header, r io.Reader) error {
		if h.Size > 1<<20 {
			return nil // a layer: manifests, configs and the index are small
		}
		b, err := io.ReadAll(r)
		small[path.Clean(h.Name)] = b
		return err
	})
	if err != nil {
		return nil, err
	}
	var index ocispec.Index
	if err := json.Unmarshal(small["index.json"], &index); err != nil || len(index.Manifests) != 1 {
		return nil, fmt.Errorf("base image %s: not an OCI archive of one image (index.json: %v)", file, err)
	}
	blob := func(d digest.Digest, v any) error {
		data, ok := small[path.Join("blobs", d.Algorithm().String(), d.Encoded())]
		if !ok {
			return fmt.Errorf("base image %s: blob %s is missing", file, d)
		}
		return json.Unmarshal(data, v)
	}
	var b baseArchive
	if err := blob(index.Manifests[0].Digest, &b.manifest); err != nil {
		return nil, err
	}
	if err := blob(b.manifest.Config.Digest, &b.config); err != nil {
		return nil, err
	}
	return &b, nil
}

func eachTarEntry(file string, do func(*tar.Header, io.Reader) error) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		if h.Typeflag == tar.TypeReg {
			if err := do(h, tr); err != nil {
				return err
			}
		}
	}
}

// writeArchive writes the image as an OCI archive: the base's blobs, the
// new layer, config and manifest, and an index that names the image.
func (img Image) writeArchive(w io.Writer) error {
	layerTar, err := layer(img.Files)
	if err != nil {
		return err
	}
	layerDigest := digest.FromBytes(layerTar)
	config := ocispec.Image{Platform: ocispec.Platform{Architecture: runtime.GOARCH, OS: "linux"}, RootFS: ocispec.RootFS{Type: "layers"}}
	manifest := ocispec.Manifest{Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageManifest}
	if img.Base != "" {
		base, err := readBase(img.Base)
		if err != nil {
			return err
		}
		config, manifest.Layers = base.config, base.manifest.Layers
	}
	overlayConfig(&config.Config, img.Config)
	config.RootFS.DiffIDs = append(config.RootFS.DiffIDs, layerDigest)
	created := time.Unix(0, 0).UTC()
	config.Created = &created
	config.History = append(config.History, ocispec.History{Created: &created, CreatedBy: "podroles kubenode: " + img.Ref})
	manifest.Layers = append(manifest.Layers, ocispec.Descriptor{MediaType: ocispec.MediaTypeImageLayer, Digest: layerDigest, Size: int64(len(layerTar))})
	configJSON, err := json.Marshal(config)
	if err != nil {
		return err
	}
	manifest.Config = ocispec.Descriptor{MediaType: ocispec.MediaTypeImageConfig, Digest: digest.FromBytes(configJSON), Size: int64(len(configJSON))}
	manifestJSON, err := json.Marshal(manifest)
	if err != nil {
		return err
	}
	index := ocispec.Index{Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageIndex, Manifests: []ocispec.Descriptor{{
		MediaType: ocispec.MediaTypeImageManifest, Digest: digest.FromBytes(manifestJSON), Size: int64(len(manifestJSON)),
		// containerd names the image after the first; OCI tools after the
		// second.
		Annotations: map[string]string{"io.containerd.image.name": img.Ref, ocispec.AnnotationRefName: img.Ref},
	}}}
	indexJSON, err := json.Marshal(index)
	if err != nil {
		return err
	}

	tw := tar.NewWriter(w)
	put := func(name string, data []byte) error {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg, ModTime: created}); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	putBlob := func(data []byte) error {
		sum := sha256.Sum256(data)
		return put(fmt.Sprintf("blobs/sha256/%x", sum), data)
	}
	if err := put(ocispec.ImageLayoutFile, []byte(`{"imageLayoutVersion":"1.0.0"}`)); err != nil {
		return err
	}
	if img.Base != "" {
		// The base's layers, as they are; its own manifest and config go
		// along unused.
		err := eachTarEntry(img.Base, func(h *tar.Header, r io.Reader) error {
			if path.Dir(path.Dir(path.Clean(h.Name))) != "blobs" {
				return nil
			}
			if err := tw.WriteHeader(&tar.Header{Name: h.Name, Mode: 0o644, Size: h.Size, Typeflag: tar.TypeReg, ModTime: created}); err != nil {
				return err
			}
			_, err := io.Copy(tw, r)
			return err
		})
		if err != nil {
			return err
		}
	}
	for _, blob := range [][]byte{layerTar, configJSON, manifestJSON} {
		if err := putBlob(blob); err != nil {
			return err
		}
	}
	if err := put("index.json", indexJSON); err != nil {
		return err
	}
	return tw.Close()
}

// overlayConfig sets the fields of over that are set on c.
func overlayConfig(c *ocispec.ImageConfig, over ocispec.ImageConfig) {
	if over.User != "" {
		c.User = over.User
	}
	if over.Entrypoint != nil {
		c.Entrypoint, c.Cmd = over.Entrypoint, nil
	}
	if over.Cmd != nil {
		c.Cmd = over.Cmd
	}
	if over.StopSignal != "" {
		c.StopSignal = over.StopSignal
	}
	c.Env = append(c.Env, over.Env...)
	if over.WorkingDir != "" {
		c.WorkingDir = over.WorkingDir
	}
}
