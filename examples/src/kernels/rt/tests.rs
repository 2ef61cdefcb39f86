//! Ray tracer tests.

use super::render::trace;
use super::*;

/// A white floor, one sphere hovering above the origin, a light straight
/// above it.
fn shadow_scene() -> Scene {
    Scene {
        camera: Camera {
            eye: Vec3::new(0.0, 3.0, 6.0),
            target: Vec3::ZERO,
            up: Vec3::new(0.0, 1.0, 0.0),
            fov_deg: 60.0,
        },
        spheres: vec![Sphere {
            center: Vec3::new(0.0, 1.0, 0.0),
            radius: 0.5,
            material: Material::matte(Vec3::new(1.0, 0.2, 0.2)),
        }],
        planes: vec![Plane {
            point: Vec3::ZERO,
            normal: Vec3::new(0.0, 1.0, 0.0),
            material: Material::matte(Vec3::splat(1.0)),
        }],
        lights: vec![Light {
            position: Vec3::new(0.0, 5.0, 0.0),
            color: Vec3::splat(1.0),
        }],
        ambient: 0.1,
        background: Vec3::new(0.0, 0.0, 1.0),
        max_depth: 2,
    }
}

fn brightness(c: Vec3) -> f64 {
    c.x + c.y + c.z
}

#[test]
fn point_under_sphere_is_in_shadow() {
    let s = shadow_scene();
    let eye = s.camera.eye;
    let look = |p: Vec3| trace(&s, &Ray::new(eye, p - eye), s.max_depth);
    let under = look(Vec3::new(0.0, 0.0, 0.0));
    let beside = look(Vec3::new(1.5, 0.0, 0.0));
    // Under the sphere only ambient light remains: 0.1 · white.
    assert!((brightness(under) - 0.3).abs() < 1e-9, "{under:?}");
    assert!(brightness(beside) > 3.0 * brightness(under), "{beside:?}");
    // Removing the sphere lights the point.
    let mut no_sphere = s.clone();
    no_sphere.spheres.clear();
    let lit = trace(&no_sphere, &Ray::new(eye, -eye), 2);
    assert!(brightness(lit) > 2.0);
    // The top of the sphere faces the light: bright red.
    let top = look(Vec3::new(0.0, 1.5, 0.0));
    assert!(top.x > 0.8 && top.y < 0.3, "{top:?}");
    // Looking up: sky.
    let sky = trace(&s, &Ray::new(eye, Vec3::new(0.0, 1.0, 0.0)), 2);
    assert!(sky.z > 0.0 && sky.x == 0.0);
}

#[test]
fn rendered_shadow_pixel_is_darker() {
    let s = shadow_scene();
    let (w, h) = (64, 48);
    let img = render(&s, w, h);
    assert_eq!(img.rgb.len(), (w * h * 3) as usize);
    // Find the pixels whose primary rays hit the floor at the origin and at
    // x = 1.5 (closest pixel centres).
    let floor_pixel = |target: Vec3| {
        let mut best = (f64::INFINITY, 0, 0);
        for y in 0..h {
            for x in 0..w {
                let r = primary_ray(&s, w, h, x, y);
                if r.dir.y < 0.0 {
                    let p = r.at(-r.origin.y / r.dir.y);
                    let d = (p - target).length();
                    if d < best.0 {
                        best = (d, x, y);
                    }
                }
            }
        }
        img.pixel(best.1, best.2)
    };
    let under = floor_pixel(Vec3::new(0.0, 0.0, 0.0));
    let beside = floor_pixel(Vec3::new(1.5, 0.0, 0.0));
    let sum = |p: [u8; 3]| p.iter().map(|&c| u32::from(c)).sum::<u32>();
    assert!(sum(under) * 3 < sum(beside), "{under:?} vs {beside:?}");
    // The top-left corner looks at the sky.
    assert_eq!(img.pixel(0, 0)[0], 0);
    assert!(img.pixel(0, 0)[2] > 0);
}

#[test]
fn reflection_shows_other_objects() {
    // A mirror floor reflects the red sphere: the pixel below the sphere's
    // reflection is reddish rather than sky-blue.
    let mut s = shadow_scene();
    s.planes[0].material.reflectivity = 0.9;
    s.lights[0].position = Vec3::new(3.0, 5.0, 3.0);
    let eye = s.camera.eye;
    // Mirror image of the sphere centre is (0, -1, 0).
    let c = trace(&s, &Ray::new(eye, Vec3::new(0.0, -1.0, 0.0) - eye), 2);
    assert!(c.x > c.z, "{c:?}");
    let mut no_reflect = s.clone();
    no_reflect.max_depth = 0;
    let c0 = trace(
        &no_reflect,
        &Ray::new(eye, Vec3::new(0.0, -1.0, 0.0) - eye),
        0,
    );
    assert_ne!(c, c0);
}

#[test]
fn render_is_deterministic_and_rows_compose() {
    let s = scene(3);
    let (w, h) = (40, 30);
    let a = render(&s, w, h);
    let b = render(&s, w, h);
    assert_eq!(a, b);
    let mut pieces = Vec::new();
    for (y0, y1) in [(0, 7), (7, 8), (8, 8), (8, 21), (21, 30)] {
        pieces.extend(render_rows(&s, w, h, y0, y1));
    }
    assert_eq!(pieces, a.rgb);
    // The image is not flat.
    let first = a.pixel(0, 0);
    assert!((0..h).any(|y| (0..w).any(|x| a.pixel(x, y) != first)));
}

#[test]
#[should_panic(expected = "bad row range")]
fn render_rows_rejects_bad_range() {
    render_rows(&scene(0), 10, 10, 5, 11);
}

#[test]
fn scenes_vary_with_index() {
    let counts: Vec<usize> = (0..DEFAULT_SCENES).map(sphere_count).collect();
    assert!(counts.iter().all(|&n| (4..=24).contains(&n)));
    assert!(*counts.iter().min().unwrap() <= 6);
    assert!(*counts.iter().max().unwrap() >= 22);
    for i in 0..DEFAULT_SCENES {
        let s = scene(i);
        assert_eq!(s, scene(i), "scene {i} not deterministic");
        // Rejection sampling may drop a sphere that found no free place.
        assert!(s.spheres.len() <= counts[i as usize] && s.spheres.len() >= 4);
        assert!((1..=3).contains(&s.lights.len()));
        // No two spheres overlap.
        for (j, a) in s.spheres.iter().enumerate() {
            for b in &s.spheres[j + 1..] {
                assert!((a.center - b.center).length() > a.radius + b.radius);
            }
        }
    }
    assert_ne!(scene(1), scene(2));
}

#[test]
fn checksum_is_order_and_byte_sensitive() {
    let images: Vec<Image> = (0..3).map(|i| render(&scene(i), 16, 12)).collect();
    let c = checksum(&images);
    assert_eq!(c, checksum(&images));
    let mut swapped = images.clone();
    swapped.swap(0, 1);
    assert_ne!(checksum(&swapped), c);
    let mut changed = images.clone();
    changed[2].rgb[17] ^= 1;
    assert_ne!(checksum(&changed), c);
    // Same bytes, different shape.
    let mut reshaped = images.clone();
    reshaped[0].width = 12;
    reshaped[0].height = 16;
    assert_ne!(checksum(&reshaped), c);
    // Incremental use equals the slice helper; empty input is the offset.
    let mut inc = Checksum::new();
    images.iter().for_each(|i| inc.add(i));
    assert_eq!(inc.value(), c);
    assert_eq!(checksum(&[]), 0xCBF2_9CE4_8422_2325);
}

#[test]
fn fnv1a_reference() {
    // FNV-1a 64 of "a" is 0xaf63dc4c8601ec8c: an image 0x0 with bytes
    // cannot express that directly, so check the byte routine.
    let mut c = Checksum::new();
    c.bytes(b"a");
    assert_eq!(c.value(), 0xAF63_DC4C_8601_EC8C);
}

fn temp_path(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("rill-rt-{}-{name}", std::process::id()))
}

#[test]
fn ppm_output() {
    let img = Image {
        width: 2,
        height: 1,
        rgb: vec![255, 0, 0, 1, 2, 3],
    };
    let bytes = encode_ppm(&img);
    assert_eq!(&bytes[..11], b"P6\n2 1\n255\n");
    assert_eq!(&bytes[11..], &img.rgb[..]);
    let path = temp_path("a.ppm");
    write_ppm(&path, &img).unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn png_output_round_trips() {
    let img = render(&scene(5), 24, 18);
    let path = temp_path("b.png");
    write_png(&path, &img).unwrap();
    let data = std::fs::read(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    let decoder = png::Decoder::new(std::io::Cursor::new(data));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    assert_eq!((info.width, info.height), (24, 18));
    assert_eq!(info.color_type, png::ColorType::Rgb);
    assert_eq!(&buf[..info.buffer_size()], &img.rgb[..]);
}

#[test]
fn write_errors_are_reported() {
    let img = Image {
        width: 1,
        height: 1,
        rgb: vec![0; 3],
    };
    let dir = std::path::Path::new("/nonexistent-dir-for-rill-test/x");
    assert!(write_ppm(dir.join("a.ppm"), &img).is_err());
    assert!(write_png(dir.join("a.png"), &img).is_err());
}

/// Single-thread timing of the default workload; run with
/// `cargo test --release -p rill-examples --lib kernels::rt -- --ignored --nocapture`.
/// Set `RILL_RT_DUMP=dir` to also write the images as PNG.
#[test]
#[ignore = "timing, run in release"]
fn timing() {
    let t = std::time::Instant::now();
    let mut per_scene = Vec::new();
    let mut images = Vec::new();
    for i in 0..DEFAULT_SCENES {
        let t0 = std::time::Instant::now();
        images.push(render(&scene(i), DEFAULT_WIDTH, DEFAULT_HEIGHT));
        per_scene.push(t0.elapsed().as_secs_f64());
    }
    let total = t.elapsed().as_secs_f64();
    let min = per_scene.iter().cloned().fold(f64::INFINITY, f64::min);
    let max = per_scene.iter().cloned().fold(0.0, f64::max);
    println!(
        "RT {DEFAULT_SCENES} scenes {DEFAULT_WIDTH}x{DEFAULT_HEIGHT}: {total:.3} s (per scene {:.1}..{:.1} ms) checksum {:016x}",
        min * 1e3,
        max * 1e3,
        checksum(&images)
    );
    if let Ok(dir) = std::env::var("RILL_RT_DUMP") {
        for (i, img) in images.iter().enumerate() {
            write_png(format!("{dir}/scene{i:03}.png"), img).unwrap();
        }
    }
}
