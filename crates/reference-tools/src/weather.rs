//! `POST /api/weather/current`: current conditions from a small offline gazetteer.
//!
//! Places are named `City, Region, Country` exactly as listed; matching
//! ignores case, spacing and punctuation but nothing else, so
//! `"Flower Mound, TX"` is not found. The failure says how names are written
//! and, when exactly one place has that city (or exactly one name is within a
//! small edit distance), offers it as `details.suggestion`.

use recourse_tool::protocol::ToolError;
use recourse_tool::{Success, ToolJson, ToolResult};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::text::{edit_distance, normalize, round_to};

/// Input of `POST /api/weather/current`.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct WeatherInput {
    /// The place, written `City, Region, Country`, e.g. "Flower Mound, Texas, US".
    pub(crate) location: String,
    /// `metric` (default: °C, km/h) or `imperial` (°F, mph).
    pub(crate) units: Option<Units>,
}

/// Units of a weather report.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Units {
    /// °C and km/h.
    #[default]
    Metric,
    /// °F and mph.
    Imperial,
}

/// Current conditions at a place.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct WeatherReport {
    location: &'static str,
    latitude: f64,
    longitude: f64,
    units: Units,
    temperature: f64,
    humidity_percent: u8,
    wind_speed: f64,
    conditions: &'static str,
}

#[derive(Debug)]
struct Place {
    name: &'static str,
    latitude: f64,
    longitude: f64,
    temp_c: f64,
    humidity_percent: u8,
    wind_kph: f64,
    conditions: &'static str,
}

const fn place(
    name: &'static str,
    (latitude, longitude): (f64, f64),
    temp_c: f64,
    humidity_percent: u8,
    wind_kph: f64,
    conditions: &'static str,
) -> Place {
    Place {
        name,
        latitude,
        longitude,
        temp_c,
        humidity_percent,
        wind_kph,
        conditions,
    }
}

const GAZETTEER: [Place; 10] = [
    place(
        "Flower Mound, Texas, US",
        (33.0146, -97.0970),
        31.5,
        48,
        14.0,
        "sunny",
    ),
    place(
        "Dallas, Texas, US",
        (32.7767, -96.7970),
        32.0,
        45,
        16.0,
        "sunny",
    ),
    place(
        "New York, New York, US",
        (40.7128, -74.0060),
        24.0,
        62,
        18.0,
        "partly cloudy",
    ),
    place(
        "Springfield, Illinois, US",
        (39.7817, -89.6501),
        27.0,
        58,
        12.0,
        "clear",
    ),
    place(
        "Springfield, Missouri, US",
        (37.2089, -93.2923),
        28.5,
        55,
        10.0,
        "thunderstorms",
    ),
    place(
        "London, England, GB",
        (51.5074, -0.1278),
        17.0,
        72,
        20.0,
        "light rain",
    ),
    place(
        "Paris, Ile-de-France, FR",
        (48.8566, 2.3522),
        21.0,
        60,
        11.0,
        "cloudy",
    ),
    place(
        "Berlin, Berlin, DE",
        (52.5200, 13.4050),
        19.5,
        64,
        15.0,
        "overcast",
    ),
    place(
        "Tokyo, Tokyo, JP",
        (35.6762, 139.6503),
        26.0,
        70,
        9.0,
        "humid",
    ),
    place(
        "Sydney, New South Wales, AU",
        (-33.8688, 151.2093),
        14.0,
        66,
        22.0,
        "windy",
    ),
];

/// The handler.
pub(crate) async fn current(ToolJson(input): ToolJson<WeatherInput>) -> ToolResult<WeatherReport> {
    let units = input.units.unwrap_or_default();
    let place = find_place(&input.location)?;
    Ok(Success(report(place, units)))
}

fn find_place(location: &str) -> Result<&'static Place, ToolError> {
    let wanted = normalize(location);
    if wanted.replace(',', "").trim().is_empty() {
        return Err(
            ToolError::input_error("EMPTY_LOCATION", "`location` must name a place")
                .detail("field", "location"),
        );
    }
    if let Some(place) = GAZETTEER.iter().find(|p| normalize(p.name) == wanted) {
        return Ok(place);
    }
    let mut error = ToolError::not_found(
        "LOCATION_NOT_FOUND",
        format!("No place called '{}' in the gazetteer", location.trim()),
    )
    .retryable(true)
    .detail("field", "location")
    .detail("hint", "Write places as 'City, Region, Country' with the region spelled out, e.g. 'Dallas, Texas, US'");
    let candidates = close_matches(&wanted);
    match candidates.as_slice() {
        [only] => error = error.detail("suggestion", only.name),
        [] => {}
        several => {
            let names: Vec<&str> = several.iter().map(|p| p.name).collect();
            error = error.detail("candidates", names.join("; "));
        }
    }
    Err(error)
}

/// Places with the same city, or failing that, names within edit distance 3.
fn close_matches(wanted: &str) -> Vec<&'static Place> {
    let city = wanted.split(',').next().unwrap_or("");
    let same_city: Vec<&Place> = GAZETTEER
        .iter()
        .filter(|p| normalize(p.name).split(',').next() == Some(city))
        .collect();
    if !same_city.is_empty() {
        return same_city;
    }
    GAZETTEER
        .iter()
        .filter(|p| edit_distance(&normalize(p.name), wanted) <= 3)
        .collect()
}

fn report(place: &'static Place, units: Units) -> WeatherReport {
    let (temperature, wind_speed) = match units {
        Units::Metric => (place.temp_c, place.wind_kph),
        Units::Imperial => (
            round_to(place.temp_c * 9.0 / 5.0 + 32.0, 1),
            round_to(place.wind_kph * 0.621_371, 1),
        ),
    };
    WeatherReport {
        location: place.name,
        latitude: place.latitude,
        longitude: place.longitude,
        units,
        temperature,
        humidity_percent: place.humidity_percent,
        wind_speed,
        conditions: place.conditions,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn abbreviated_state_is_not_found_but_suggests_the_full_name() {
        let err = find_place("Flower Mound, TX").unwrap_err();
        assert_eq!(err.code, "LOCATION_NOT_FOUND");
        assert!(err.retryable);
        assert_eq!(
            err.detail_str("suggestion"),
            Some("Flower Mound, Texas, US")
        );
        let found = find_place(err.detail_str("suggestion").unwrap()).unwrap();
        assert_eq!(found.name, "Flower Mound, Texas, US");
    }

    #[test]
    fn ambiguous_city_lists_candidates_without_a_suggestion() {
        let err = find_place("Springfield").unwrap_err();
        assert_eq!(err.detail_str("suggestion"), None);
        assert!(err.detail_str("candidates").unwrap().contains("Missouri"));
    }

    #[test]
    fn typos_within_three_edits_are_suggested() {
        let err = find_place("Londn, England, GB").unwrap_err();
        assert_eq!(err.detail_str("suggestion"), Some("London, England, GB"));
    }

    #[test]
    fn imperial_converts() {
        let place = find_place("london, england, gb").unwrap();
        let r = report(place, Units::Imperial);
        assert_eq!(r.temperature, 62.6);
        assert_eq!(r.wind_speed, 12.4);
    }

    #[test]
    fn blank_location_is_an_input_error() {
        assert_eq!(find_place("  , ").unwrap_err().code, "EMPTY_LOCATION");
    }
}
